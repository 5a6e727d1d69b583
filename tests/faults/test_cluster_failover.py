"""A primary of a Redis Cluster hands its slots to its replica (CLUSTER FAILOVER) while
people write."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.redis_failover import cluster_shard_failover

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_a_shard_failover_loses_and_repeats_nothing(clusters: ClusterFactory) -> None:
    report = await cluster_shard_failover(clusters, Traffic(threads=4, messages=5))
    print(report.text())  # shown with -rP: the summary line of a run that passed
    assert report.ok, report.explain()
