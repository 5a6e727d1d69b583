"""Redis fails over under the replicas while people write and turns are mid-flight: on
Sentinel (a primary, one replica, three Sentinels; the replicas on a ``redis+sentinel://``
URL), gracefully or by a crash, and on a Redis Cluster (three primaries with a replica each).

- ``sentinel_graceful_failover``: SENTINEL FAILOVER sent to one Sentinel ``at_s`` into the
  conversation. The Sentinels promote the replica at once and demote the old primary some
  10 s later; whatever the old primary took in between is lost in its resync.
- ``sentinel_crash_failover``: SIGKILL of the primary; the Sentinels find it down after a
  second and promote the replica. The old primary is not restarted.
- ``cluster_shard_failover``: CLUSTER FAILOVER on the replica of the primary holding the most
  of the conversation's threads (or of the bot's ``shard``): the primary hands its slots
  over, the replica takes them.

Slack delivers as it does: a refused or slow delivery is retried (compressed delays that
outlast the failover), and some accepted ones are delivered again anyway (the traffic's
``duplicates``). Each scenario waits until the failover is over (every Sentinel or node
names the new primary, the old primary demoted unless killed), then finishes as usual.

Expected: every message answered exactly once, in order; no delivery answered HTTP 500 (a
Redis that is failing over is "unavailable": 503, so Slack retries); no traceback in any
replica's log; the first answer after the failover within 30 s; and the harness's usual
checks. Each report's summary line counts what was sent, answered once, duplicated, lost,
out of order, the refused deliveries by status, and the first answer after the failover.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from tests.faults.cluster import Cluster
from tests.faults.invariants import Report
from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.script import Plan, Question, Step
from tests.faults.topology import REDIS_CLUSTER, SENTINEL

AT_S = 2.5  # the failover, this long after people began to write
GAP_S = 1.0  # between two messages of a thread: people still write after the failover
# Slack's retries, compressed, must outlast the failover: a crashed primary is found down
# after 1 s and replaced within a few more; with min-replicas-to-write, writes are refused
# until the old primary is demoted and in sync, some 12 s (real retries come after 1 and
# 5 min).
RETRY_DELAYS_S = (1.0, 4.0, 12.0)
OVER_WITHIN_S = 40.0  # a failover not over by then is noted, and the scenario finishes


def plan(question: Question) -> Plan:
    """Every turn runs one tool step: about 1.5 s in all, so some are always mid-flight."""
    return Plan(steps=(Step(1.0),), delay_s=0.2)


async def sentinel_graceful_failover(
    make: ClusterFactory,
    traffic: Traffic,
    *,
    at_s: float = AT_S,
    gap_s: float = GAP_S,
    min_replicas_to_write: int = 0,
) -> Report:
    name = "sentinel-graceful-failover" + ("-min-replicas" if min_replicas_to_write else "")
    return await _failover(
        make,
        traffic,
        name,
        Cluster.sentinel_failover,
        at_s=at_s,
        gap_s=gap_s,
        topology=SENTINEL,
        min_replicas_to_write=min_replicas_to_write,
    )


async def sentinel_crash_failover(
    make: ClusterFactory, traffic: Traffic, *, at_s: float = AT_S, gap_s: float = GAP_S
) -> Report:
    return await _failover(
        make,
        traffic,
        "sentinel-crash-failover",
        Cluster.kill_primary,
        at_s=at_s,
        gap_s=gap_s,
        topology=SENTINEL,
    )


async def cluster_shard_failover(
    make: ClusterFactory,
    traffic: Traffic,
    *,
    at_s: float = AT_S,
    gap_s: float = GAP_S,
    shard: int | None = None,
) -> Report:
    async def inject(cluster: Cluster) -> float:
        return await cluster.cluster_failover(shard)

    return await _failover(
        make,
        traffic,
        "cluster-shard-failover",
        inject,
        at_s=at_s,
        gap_s=gap_s,
        topology=REDIS_CLUSTER,
    )


async def _failover(
    make: ClusterFactory,
    traffic: Traffic,
    name: str,
    inject: Callable[[Cluster], Awaitable[float]],
    *,
    at_s: float,
    gap_s: float,
    **options: Any,
) -> Report:
    async with make(
        name, plan=plan, retry_delays_s=RETRY_DELAYS_S, **options, **traffic.options()
    ) as cluster:
        cluster.converse(traffic.threads, traffic.messages, gap_s=gap_s)
        await cluster.into_conversation(at_s)
        began = await inject(cluster)
        mid_flight = _mid_flight(cluster, began)
        over = await cluster.failover_over(OVER_WITHIN_S)
        report = await cluster.finish(over)
        cluster.add_failover_checks(report)
        report.add(
            "turns were in flight at the failover",
            bool(mid_flight),
            ", ".join(q.text for q in mid_flight) or "none: the scenario did not happen",
        )
        written = sum(1 for s in cluster.router.sent if not s.probe and s.at > began)
        report.notes.append(
            f"the failover began {began - (cluster.conversation_started or began):.1f} s into "
            f"the conversation, with {len(mid_flight)} turns in flight (queued or running); "
            f"{written} messages were written after it"
        )
        return report


def _mid_flight(cluster: Cluster, moment: float) -> list[Question]:
    """The turns in flight at ``moment``: accepted (a replica acknowledged the message) or
    already being worked on (the model asked about it), and not yet answered."""
    asked = {call.question for call in cluster.answers.log if call.question and call.at < moment}
    for sent in cluster.router.sent:
        queued = cluster.router.queued_at(sent)
        if queued is not None and queued < moment:
            asked.add(sent.question)
    return sorted(q for q in asked if cluster.answered_at.get(q, time.monotonic()) > moment)
