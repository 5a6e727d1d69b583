"""Slack refuses every method the bot reads the conversation with (503) for the whole run:
the thread's earlier messages, people's and channels' names, file details.

Expected: every message is still answered exactly once, in order, from its own text.
"""

from __future__ import annotations

from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.script import Plan, Question, Step

READING = ("conversations.replies", "users.info", "conversations.info", "files.info")
OUTAGE_S = 120.0  # longer than the scenario


def plan(question: Question) -> Plan:
    return Plan(steps=(Step(0.3),), delay_s=0.2)


async def slack_reads_down(make: ClusterFactory, traffic: Traffic) -> Report:
    async with make("slack-reads-down", plan=plan, **traffic.options()) as cluster:
        cluster.slack.outage(READING, OUTAGE_S)
        cluster.converse(traffic.threads, traffic.messages, gap_s=1.0)
        report = await cluster.finish(None)
        refused = [c for c in cluster.slack.calls if c.status == 503]
        report.notes.append(f"{len(refused)} reading calls refused")
        return report
