"""A running turn's thread lock disappears from Redis."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.lock_loss import lose_lock

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


@pytest.mark.parametrize("overwrite", [False, True], ids=["deleted", "overwritten"])
async def test_one_answer_and_nothing_left_running(
    clusters: ClusterFactory, overwrite: bool
) -> None:
    report = await lose_lock(clusters, Traffic(threads=3, messages=3), overwrite=overwrite)
    assert report.ok, report.explain()
