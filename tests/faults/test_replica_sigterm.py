"""SIGTERM of the replica running a long turn, with a 2 s shutdown grace period."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.replica_sigterm import sigterm_long_turn

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_exits_within_grace_and_another_replica_finishes_the_turn(
    clusters: ClusterFactory,
) -> None:
    report = await sigterm_long_turn(clusters, Traffic(threads=3, messages=2), stuck_sync=False)
    assert report.ok, report.explain()


async def test_exits_within_grace_even_with_a_stuck_sync_tool(clusters: ClusterFactory) -> None:
    report = await sigterm_long_turn(clusters, Traffic(threads=3, messages=2), stuck_sync=True)
    assert report.ok, report.explain()
