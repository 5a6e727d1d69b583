"""A replica cut off from Redis but alive: it never speaks for a turn it no longer owns."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.partition import cut_during_ingress, cut_mid_stream, cut_mid_tool

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_cut_off_mid_tool_the_turn_is_taken_over_and_answered_once(
    clusters: ClusterFactory,
) -> None:
    report = await cut_mid_tool(clusters, Traffic(threads=2, messages=2))
    assert report.ok, report.explain()


async def test_cut_off_mid_stream_no_stale_append_lands_after_the_takeover(
    clusters: ClusterFactory,
) -> None:
    report = await cut_mid_stream(clusters, Traffic(threads=2, messages=2))
    assert report.ok, report.explain()


async def test_cut_off_during_ingress_slack_retries_elsewhere(clusters: ClusterFactory) -> None:
    report = await cut_during_ingress(clusters, Traffic(threads=3, messages=2))
    assert report.ok, report.explain()
