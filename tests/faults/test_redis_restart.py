"""Redis, persisting to an append-only file, restarts while turns are mid-flight."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.redis_restart import redis_restart

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_exactly_once_in_order_and_nothing_refused_once_redis_is_back(
    clusters: ClusterFactory,
) -> None:
    report = await redis_restart(clusters, Traffic(threads=4, messages=3, replicas=3))
    assert report.ok, report.explain()
