"""Redis (with an append-only file) stops gracefully for DOWN_S while turns are mid-flight,
then starts again with its data. Events refused meanwhile are redelivered by Slack.

Expected: every message answered exactly once, in order; nothing refused once Redis is back.
"""

from __future__ import annotations

from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.script import Plan, Question, Step

DOWN_S = 4.0
# Slack's retries, compressed, must outlast the outage (real ones come after 1 and 5 min).
RETRY_DELAYS_S = (1.0, 2.0, 4.0)


def plan(question: Question) -> Plan:
    return Plan(steps=(Step(1.5),), delay_s=0.5)


async def redis_restart(make: ClusterFactory, traffic: Traffic) -> Report:
    async with make(
        "redis-restart",
        plan=plan,
        persistent_redis=True,
        retry_delays_s=RETRY_DELAYS_S,
        **traffic.options(),
    ) as cluster:
        threads = cluster.converse(traffic.threads, traffic.messages, gap_s=1.0)
        await cluster.step_started(Question(threads[0], 1).step_name(1))  # mid-flight
        stopped, back = await cluster.restart_redis(DOWN_S)
        report = await cluster.finish(back)
        report.notes.append(f"Redis was away {back - stopped:.1f} s")
        return report
