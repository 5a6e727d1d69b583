"""Slack refuses every posting method for 9 s while turns are answered."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.slack_outage import slack_outage

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "posting"])
async def test_every_message_answered_once_after_slack_recovers(
    clusters: ClusterFactory, streaming: bool
) -> None:
    report = await slack_outage(
        clusters, Traffic(threads=4, messages=3, replicas=3), streaming=streaming
    )
    assert report.ok, report.explain()
