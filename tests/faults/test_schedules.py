"""Schedules (issue 34) across replicas and faults: each run exactly once and on time while
the replica running a run's turn is SIGKILLed mid-turn (the other takes it over) and the
redis-server is SIGKILLed and restarted from its append-only file; unscheduled and paused
schedules stop; a role lost between two runs takes its tool away from the second.

One deployment for all of it (tests/faults/scenarios/schedules.py): it is four consecutive
minutes of wall time, after waiting up to a minute for the first."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory
from tests.faults.scenarios.schedules import BUDGET_S, schedules_through_faults

pytestmark = [pytest.mark.faults, pytest.mark.timeout(BUDGET_S + 30)]


async def test_every_run_once_and_on_time_through_a_kill_mid_run_and_a_redis_kill(
    clusters: ClusterFactory,
) -> None:
    report = await schedules_through_faults(clusters)
    print(report.text())
    assert report.ok, report.explain()
