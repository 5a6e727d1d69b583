"""SIGKILL of the replica running a long turn: mid-tool, while it streams the answer, or
after a tool's result was saved and before the turn settled.

Expected: another replica takes the turn over within TAKEOVER_S, there is exactly one
answer, no stream is left open and no "running…" is left; mid-tool, the tool that was
running ran at most twice and finished tools did not run again; every run of a tool step is
in the audit log once, the killed replica's saved call too (audited with its result, before
the kill: the replica that settles the turn does not audit it again).
"""

from __future__ import annotations

import json

from tests.faults.app_config import PREFIX
from tests.faults.cluster import Cluster
from tests.faults.invariants import Report
from tests.faults.scenarios import (
    ClusterFactory,
    Traffic,
    add_audit_checks,
    add_step_checks,
    step_audit,
)
from tests.faults.script import Plan, Question, Step
from tests.waiting import until, until_true

TAKEOVER_S = 15.0
SHORT_LEASE = {"queue": {"lock_ttl_s": 6.0, "claim_idle_s": 6.0}}  # a takeover within seconds
ANSWER_DELAY_S = 4.0  # the model thinks this long before each reply to the saved-result turn
LONG = Question("t1", 1)
QUICK = Plan(steps=(Step(0.5),), delay_s=0.1)
TAIL = (
    "This answer is written slowly, a few characters at a time, so that the replica writing "
    "it can be killed while the thread still shows it streaming. Nothing in it matters "
    "except its length, which keeps the stream open for several seconds. "
) * 2


def mid_tool_plan(question: Question) -> Plan:
    return Plan(steps=(Step(0.3), Step(4.0))) if question == LONG else QUICK


def mid_stream_plan(question: Question) -> Plan:
    if question == LONG:
        return Plan(steps=(Step(0.3),), tail=TAIL, text_piece=6, chunk_delay_s=0.1)
    return QUICK


async def kill_mid_tool(make: ClusterFactory, traffic: Traffic) -> Report:
    async with make(
        "kill-mid-tool", plan=mid_tool_plan, config=SHORT_LEASE, **traffic.options()
    ) as cluster:
        cluster.converse(traffic.threads, traffic.messages)
        running = await cluster.step_started(LONG.step_name(2))
        killed_at = await cluster.kill(cluster.replica_of(running.pid))
        report = await cluster.finish(killed_at)
        add_takeover(report, await cluster.takeover_s(LONG, killed_at, running.pid))
        await add_step_checks(report, cluster, LONG.step_name(1), running.name, "the kill")
        await add_audit_checks(report, cluster, LONG)
        return report


def saved_result_plan(question: Question) -> Plan:
    return Plan(steps=(Step(0.3),), delay_s=ANSWER_DELAY_S) if question == LONG else QUICK


async def kill_after_a_saved_result(make: ClusterFactory, traffic: Traffic) -> Report:
    """Kill the replica once its tool step's result is in the turn's journal in Redis, while
    the model thinks about the answer (before the turn can settle); another replica settles
    it. The step is in the audit log once, from the moment its result was saved."""
    async with make(
        "kill-after-a-saved-result", plan=saved_result_plan, config=SHORT_LEASE, **traffic.options()
    ) as cluster:
        cluster.converse(traffic.threads, traffic.messages)
        ran = await cluster.step_started(LONG.step_name(1))
        call_id = "call_t1_m1_s1"  # tests.faults.script names the call
        journal = await _journal_holding(cluster, call_id)
        killed_at = await cluster.kill(cluster.replica_of(ran.pid))
        turn_key = journal.removesuffix(":journal")
        state = str(await cluster.client().hget(turn_key, "state"))
        audited_at_kill = (await step_audit(cluster, LONG)).get(LONG.step_name(1), [])
        report = await cluster.finish(killed_at)
        add_takeover(report, await cluster.takeover_s(LONG, killed_at, ran.pid))
        report.add(
            "the kill came after the step's result was journaled, before the turn settled",
            state == "running",
            f"the turn was {state} at the kill",
        )
        report.add(
            f"{LONG.step_name(1)} was audited with its saved result, before the kill",
            audited_at_kill == ["ok"],
            " + ".join(audited_at_kill) or "not audited",
        )
        audited = (await step_audit(cluster, LONG)).get(LONG.step_name(1), [])
        report.add(
            f"{LONG.step_name(1)} is in the audit log exactly once after the takeover",
            audited == ["ok"],
            " + ".join(audited) or "not audited",
        )
        starts = await cluster.starts(LONG.step_name(1))
        report.add(
            f"{LONG.step_name(1)} (saved before the kill) ran once", starts == 1, str(starts)
        )
        await add_audit_checks(report, cluster, LONG)
        return report


async def _journal_holding(cluster: Cluster, call_id: str, within_s: float = 20.0) -> str:
    """Wait until a turn's journal in Redis holds the result of ``call_id``; its key."""
    found: list[str] = []

    async def saved() -> bool:
        client = cluster.client()
        async for key in client.scan_iter(match=f"{PREFIX}turn:*:journal"):
            for item in await client.lrange(key, 0, -1):
                message = json.loads(item)
                if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                    found.append(str(key))
                    return True
        return False

    await until_true(saved, timeout=within_s)
    return found[0]


async def kill_mid_stream(make: ClusterFactory, traffic: Traffic) -> Report:
    config = {**SHORT_LEASE, "slack": {"streaming": True, "stream_buffer_chars": 16}}
    async with make(
        "kill-mid-stream", plan=mid_stream_plan, config=config, **traffic.options()
    ) as cluster:
        cluster.converse(traffic.threads, traffic.messages)
        ran = await cluster.step_started(LONG.step_name(1))  # names the replica of the turn
        thread = cluster.sent(LONG).thread_ts

        def streaming() -> bool:
            return any(
                m.streaming and LONG.answer in m.text
                for m in cluster.slack.thread(cluster.sent(LONG).channel, thread)
            )

        await until(streaming, timeout=20)
        killed_at = await cluster.kill(cluster.replica_of(ran.pid))
        report = await cluster.finish(killed_at)
        add_takeover(report, await cluster.takeover_s(LONG, killed_at, ran.pid))
        return report


def add_takeover(report: Report, seconds: float | None) -> None:
    detail = "never" if seconds is None else f"{seconds:.1f} s"
    ok = seconds is not None and seconds <= TAKEOVER_S
    report.add(f"another replica took {LONG.text} over within {TAKEOVER_S:.0f} s", ok, detail)
