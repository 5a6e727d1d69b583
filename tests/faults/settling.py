"""When the deployment has settled after a fault: every message wanted is answered (and,
when asked, nothing is left behind), no work is pending in Redis and all is quiet; or it is
stuck (nothing pending and nothing happening for a while); or time ran out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from tests.fakes.slack_server import FakeSlack
from tests.faults.app_config import PREFIX
from tests.faults.invariants import left_behind, sessions_left
from tests.faults.router import Router, Sent
from tests.faults.script import Answers
from tests.faults.topology.base import REDIS_AWAY, Topology

QUIET_S = 1.0  # no Slack call, model call or delivery for this long: work has settled
STUCK_S = 8.0  # nothing pending in Redis and nothing happening for this long: stuck


async def settle(
    wanted: Sequence[Sent],
    *,
    clean: bool,
    until: float,
    router: Router,
    slack: FakeSlack,
    answers: Answers,
    topology: Topology,
) -> str:
    """Wait until every message in ``wanted`` is answered (and, with ``clean``, nothing
    is left behind), no work is pending and all is quiet; or until nothing is pending
    and nothing has happened for STUCK_S; or until ``until``. Returns how it ended."""
    await router.delivered(max(until - time.monotonic(), 0.0))
    while True:
        now = time.monotonic()
        quiet = now - last_activity(router, slack, answers)
        busy = await pending_work(topology)
        if not busy and quiet >= QUIET_S and answered(slack, wanted, clean):
            return "settled"
        if not busy and quiet >= STUCK_S:
            return "stuck (nothing pending, nothing happening)"
        if now >= until:
            return f"out of time (still in Redis: {', '.join(busy)})" if busy else "out of time"
        await asyncio.sleep(0.1)


def answered(slack: FakeSlack, wanted: Sequence[Sent], clean: bool) -> bool:
    """Every message in ``wanted`` has its answer shown in its thread (and, with ``clean``,
    no message or session is left behind)."""
    shown = [m for m in slack.messages.values() if not m.streaming]
    for sent in wanted:
        if not any(
            sent.question.answer in m.shown and (m.thread_ts or m.ts) == sent.thread_ts
            for m in shown
        ):
            return False
    return not (clean and (left_behind(slack.messages.values()) or sessions_left(slack.sessions)))


def last_activity(router: Router, slack: FakeSlack, answers: Answers) -> float:
    """The last model call, Slack call or delivery attempt (time.monotonic())."""
    moments = [answers.last_call_at()]
    if slack.calls:
        moments.append(slack.calls[-1].at)
    if router.attempts:
        moments.append(max(a.at for a in router.attempts))
    return max(moments)


async def pending_work(topology: Topology) -> list[str]:
    """Work the bot still has in Redis: pending stream entries, or a lock held. Any key
    naming (a stream with consumer groups, a key with "lock" in its name) counts. Every
    primary is looked at (the one the Sentinels name now; each of a cluster's)."""
    busy = []
    try:
        for client in await topology.primaries():
            async for key in client.scan_iter(match=f"{PREFIX}*lock*", count=1000):
                busy.append(key)
            async for key in client.scan_iter(match=f"{PREFIX}*", count=1000, _type="stream"):
                for group in await client.xinfo_groups(key):
                    if int(group.get("pending", 0)):
                        busy.append(f"{key} ({group['pending']} pending for {group['name']})")
    except REDIS_AWAY as exc:
        busy.append(f"Redis unreachable ({type(exc).__name__})")
    return busy
