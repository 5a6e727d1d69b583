"""A message delivered late: in thread t1, m1 (a long turn) runs; m2's first delivery is
refused (as if Slack had got a 503); m3 and m4 are accepted; then Slack's retry of m2
arrives while m3 and m4 are still waiting behind m1.

Expected: t1 is answered in the order people wrote: m1, m2, m3, m4.
"""

from __future__ import annotations

import time

from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.script import Plan, Question, Step
from tests.waiting import until

LATE_THREAD = "t1"
LONG = Question(LATE_THREAD, 1)
QUICK = Plan(steps=(Step(0.3),), delay_s=0.1)


def plan(question: Question) -> Plan:
    return Plan(steps=(Step(4.0),)) if question == LONG else QUICK


async def late_redelivery(make: ClusterFactory, traffic: Traffic) -> Report:
    async with make("late-redelivery", plan=plan, **traffic.options()) as cluster:
        cluster.converse(traffic.threads - 1, traffic.messages, first=2)  # the others
        cluster.write(LATE_THREAD)
        await cluster.step_started(LONG.step_name(1))  # m1 is running
        late = cluster.write(LATE_THREAD, hold=True)
        after = [cluster.write(LATE_THREAD), cluster.write(LATE_THREAD)]
        await until(lambda: all(cluster.router.accepted(s) for s in after), timeout=10)
        cluster.router.release(late)
        released_at = time.monotonic()
        m1_running = not any(
            LONG.answer in m.shown for m in cluster.slack.messages.values() if not m.streaming
        )
        report = await cluster.finish(released_at)
        report.add(
            "m2 arrived while m1 ran and m3, m4 waited",
            m1_running,
            "" if m1_running else "m1 was already answered: the scenario did not happen",
        )
        return report
