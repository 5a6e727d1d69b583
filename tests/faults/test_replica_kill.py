"""SIGKILL of the replica running a long turn."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.replica_kill import kill_mid_stream, kill_mid_tool

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_killed_mid_tool_the_turn_is_taken_over_and_answered_once(
    clusters: ClusterFactory,
) -> None:
    report = await kill_mid_tool(clusters, Traffic(threads=3, messages=2))
    assert report.ok, report.explain()


async def test_killed_mid_stream_no_stream_is_left_open(clusters: ClusterFactory) -> None:
    report = await kill_mid_stream(clusters, Traffic(threads=3, messages=2))
    assert report.ok, report.explain()
