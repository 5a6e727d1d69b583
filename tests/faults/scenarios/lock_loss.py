"""While a long turn runs, its thread's lock disappears from Redis (deleted, or taken by a
stranger: overwritten with another value, its TTL kept). Found by SCAN: any key of the bot's
containing "lock" and the thread's ts, whatever the lead names it.

Expected: exactly one answer per message, no "running…" message or live Stop button left,
and a usable history.
"""

from __future__ import annotations

import time

from tests.faults.app_config import PREFIX
from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.script import Plan, Question, Step

LONG = Question("t1", 1)
QUICK = Plan(steps=(Step(0.5),), delay_s=0.1)
STRANGER = "a-stranger-holds-this-lock"
# A short lease: the owner finds the loss at its next renewal (a third of it), and the lock a
# stranger took (its TTL kept) lapses within seconds.
SHORT_LEASE = {"queue": {"lock_ttl_s": 6.0, "claim_idle_s": 6.0}}


def plan(question: Question) -> Plan:
    return Plan(steps=(Step(5.0),)) if question == LONG else QUICK


async def lose_lock(make: ClusterFactory, traffic: Traffic, *, overwrite: bool) -> Report:
    name = "lock-overwritten" if overwrite else "lock-deleted"
    async with make(name, plan=plan, config=SHORT_LEASE, **traffic.options()) as cluster:
        cluster.converse(traffic.threads, traffic.messages)
        await cluster.step_started(LONG.step_name(1))
        thread_ts = cluster.sent(LONG).thread_ts
        client = cluster.client()
        keys = [
            key
            async for key in client.scan_iter(match=f"{PREFIX}*lock*", count=1000)
            if thread_ts in key
        ]
        for key in keys:
            if overwrite:
                await client.set(key, STRANGER, keepttl=True)
            else:
                await client.delete(key)
        lost_at = time.monotonic()
        report = await cluster.finish(lost_at)
        report.add(
            f"found the lock of {LONG.thread}",
            bool(keys),
            ", ".join(keys) or f"no key under {PREFIX} contains 'lock' and {thread_ts}",
        )
        return report
