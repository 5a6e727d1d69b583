"""SIGKILL of the replica running a long turn."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.replica_kill import (
    kill_after_a_saved_result,
    kill_mid_stream,
    kill_mid_tool,
)

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_killed_mid_tool_the_turn_is_taken_over_and_answered_once(
    clusters: ClusterFactory,
) -> None:
    report = await kill_mid_tool(clusters, Traffic(threads=3, messages=2))
    assert report.ok, report.explain()


async def test_killed_mid_stream_no_stream_is_left_open(clusters: ClusterFactory) -> None:
    report = await kill_mid_stream(clusters, Traffic(threads=3, messages=2))
    assert report.ok, report.explain()


async def test_killed_after_a_tool_result_was_saved_the_call_is_audited_once(
    clusters: ClusterFactory,
) -> None:
    """The call one replica finished and journaled before it was killed is in the audit log
    exactly once, though another replica settled the turn."""
    report = await kill_after_a_saved_result(clusters, Traffic(threads=2, messages=1))
    assert report.ok, report.explain()
