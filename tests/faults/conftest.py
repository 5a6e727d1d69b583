from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.cluster import Cluster
from tests.faults.scenarios import ClusterFactory


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[ClusterFactory]:
    """Makes the scenario's clusters under tmp_path; whatever happens (a failure, a pytest
    timeout that never lets the body clean up), every process is killed afterwards."""
    made: list[Cluster] = []

    def make(scenario: str, **options: Any) -> Cluster:
        cluster = Cluster(tmp_path / f"{len(made) + 1}-{scenario}", scenario, **options)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.kill_now()
