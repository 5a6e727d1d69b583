"""Slack refuses every posting method (503) for OUTAGE_S while turns are being answered.

Expected: once Slack is back, every message is answered exactly once, in order, and no
progress message or stream is left behind.
"""

from __future__ import annotations

from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.script import Plan, Question, Step
from tests.waiting import until

POSTING = (
    "chat.postMessage",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "chat.update",
)
OUTAGE_S = 9.0
DELIVER_TIMEOUT_S = 30  # queue.deliver_timeout_s: longer than the outage


def plan(question: Question) -> Plan:
    return Plan(steps=(Step(1.0),), delay_s=0.2)


async def slack_outage(make: ClusterFactory, traffic: Traffic, *, streaming: bool) -> Report:
    name = f"slack-outage-{'streaming' if streaming else 'posting'}"
    config = {
        "slack": {"streaming": streaming},
        "queue": {"deliver_timeout_s": DELIVER_TIMEOUT_S},
    }
    async with make(name, plan=plan, config=config, **traffic.options()) as cluster:
        cluster.converse(traffic.threads, traffic.messages, gap_s=1.5)
        await until(lambda: len(cluster.answers.log) >= 1, timeout=20)  # turns under way
        outage = cluster.slack.outage(POSTING, OUTAGE_S)
        report = await cluster.finish(outage.ends)
        refused = [c for c in cluster.slack.calls if c.status == 503]
        report.notes.append(f"{len(refused)} Slack calls refused during the outage")
        return report
