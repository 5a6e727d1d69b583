"""SIGTERM of the replica running a long turn, with ``queue.shutdown_grace_s: 2``: its first
tool finished, its second (6 s, or a synchronous one stuck for 30 s) is running.

Expected: the process exits within the grace period plus EXIT_SLACK_S (else it is killed,
as an orchestrator would), another replica finishes the turn, the finished tool does not run
again, and there is exactly one answer.
"""

from __future__ import annotations

import signal

from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic, add_step_checks
from tests.faults.script import Plan, Question, Step

GRACE_S = 2.0
EXIT_SLACK_S = 3.0
TOOL_TIMEOUT_S = 8  # llm.tool_timeout_s, so a rerun of the stuck sync tool ends
LONG = Question("t1", 1)
QUICK = Plan(steps=(Step(0.5),), delay_s=0.1)


async def sigterm_long_turn(make: ClusterFactory, traffic: Traffic, *, stuck_sync: bool) -> Report:
    second = Step(30.0, "sync_step") if stuck_sync else Step(6.0)

    def plan(question: Question) -> Plan:
        return Plan(steps=(Step(0.3), second)) if question == LONG else QUICK

    config = {
        "queue": {"shutdown_grace_s": GRACE_S},
        "llm": {"tool_timeout_s": TOOL_TIMEOUT_S},
    }
    name = "sigterm-stuck-sync-tool" if stuck_sync else "sigterm-long-turn"
    async with make(name, plan=plan, config=config, **traffic.options()) as cluster:
        cluster.converse(traffic.threads, traffic.messages)
        running = await cluster.step_started(LONG.step_name(2))
        replica = cluster.replica_of(running.pid)
        termed_at = replica.signal(signal.SIGTERM)
        exited = await replica.exited(GRACE_S + EXIT_SLACK_S)
        if not exited:
            await replica.kill()  # as an orchestrator does after its grace period
        gone_at = replica.exited_at
        assert gone_at is not None
        report = await cluster.finish(gone_at)
        limit = GRACE_S + EXIT_SLACK_S
        report.add(
            f"exited within {limit:.0f} s of SIGTERM",
            exited,
            f"exited after {gone_at - termed_at:.1f} s"
            if exited
            else f"still running after {limit:.0f} s; killed",
        )
        await add_step_checks(report, cluster, LONG.step_name(1), running.name, "SIGTERM")
        answering = [c.at for c in cluster.answers.calls_for(LONG) if c.answered]
        report.add(
            f"another replica answered {LONG.text}",
            bool(answering) and min(answering) > gone_at,
            "no answer"
            if not answering
            else f"answered {min(answering) - gone_at:+.1f} s after the process was gone",
        )
        return report
