"""Redis behind three Sentinels fails over while people write: gracefully (SENTINEL
FAILOVER), or its primary is killed."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.redis_failover import (
    sentinel_crash_failover,
    sentinel_graceful_failover,
)

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_a_graceful_sentinel_failover_loses_and_repeats_nothing(
    clusters: ClusterFactory,
) -> None:
    report = await sentinel_graceful_failover(clusters, Traffic(threads=4, messages=5))
    print(report.text())  # shown with -rP: the summary line of a run that passed
    assert report.ok, report.explain()


async def test_a_crashed_primary_is_replaced_and_every_message_answered_once(
    clusters: ClusterFactory,
) -> None:
    report = await sentinel_crash_failover(clusters, Traffic(threads=4, messages=5))
    print(report.text())  # shown with -rP: the summary line of a run that passed
    assert report.ok, report.explain()
