"""SIGKILL of the replica running a long turn: mid-tool, or while it streams the answer.

Expected: another replica takes the turn over within TAKEOVER_S, there is exactly one
answer, no stream is left open and no "running…" is left; mid-tool, the tool that was
running ran at most twice and finished tools did not run again.
"""

from __future__ import annotations

from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic, add_step_checks
from tests.faults.script import Plan, Question, Step
from tests.waiting import until

TAKEOVER_S = 15.0
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
    async with make("kill-mid-tool", plan=mid_tool_plan, **traffic.options()) as cluster:
        cluster.converse(traffic.threads, traffic.messages)
        running = await cluster.step_started(LONG.step_name(2))
        killed_at = await cluster.kill(cluster.replica_of(running.pid))
        report = await cluster.finish(killed_at)
        add_takeover(report, await cluster.takeover_s(LONG, killed_at, running.pid))
        await add_step_checks(report, cluster, LONG.step_name(1), running.name, "the kill")
        return report


async def kill_mid_stream(make: ClusterFactory, traffic: Traffic) -> Report:
    config = {"slack": {"streaming": True, "stream_buffer_chars": 16}}
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
