"""Slack refuses every posting method for 9 s while turns are answered."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.slack_outage import slack_outage
from tests.faults.scenarios.slack_reads_down import slack_reads_down

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "posting"])
async def test_every_message_answered_once_after_slack_recovers(
    clusters: ClusterFactory, streaming: bool
) -> None:
    report = await slack_outage(
        clusters, Traffic(threads=4, messages=3, replicas=3), streaming=streaming
    )
    assert report.ok, report.explain()


async def test_every_message_answered_once_while_slack_refuses_every_read(
    clusters: ClusterFactory,
) -> None:
    """The reads added for real messages (thread, names, files) never hold up an answer."""
    report = await slack_reads_down(clusters, Traffic(threads=3, messages=2, replicas=2))
    assert report.ok, report.explain()
    assert report.notes[-1] != "0 reading calls refused", report.explain()
