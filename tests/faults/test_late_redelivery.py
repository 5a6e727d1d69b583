"""A message whose first delivery was refused arrives after later messages of its thread."""

from __future__ import annotations

import pytest

from tests.faults.scenarios import ClusterFactory, Traffic
from tests.faults.scenarios.late_redelivery import late_redelivery

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]


async def test_answers_follow_the_order_people_wrote_in(clusters: ClusterFactory) -> None:
    report = await late_redelivery(clusters, Traffic(threads=3, messages=2))
    assert report.ok, report.explain()
