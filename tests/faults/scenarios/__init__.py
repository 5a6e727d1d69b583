"""The fault scenarios, shared by the tests (a little traffic) and benchmarks/faults.py (more).

Each scenario is ``async def scenario(make, traffic, ...) -> Report``: it builds its
cluster with ``make`` (which decides where it lives and cleans it up), injects its fault
while people write, and returns the full report with its own checks added.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tests.faults.cluster import Cluster
from tests.faults.invariants import Report


class ClusterFactory(Protocol):
    def __call__(self, scenario: str, **options: Any) -> Cluster: ...


@dataclass(frozen=True)
class Traffic:
    """How much people write, and how the cluster is sized."""

    threads: int = 3
    messages: int = 3  # per thread
    duplicates: float = 0.2  # share of events Slack delivers twice
    replicas: int = 2
    budget_s: float = 50.0  # the whole scenario, start-up included
    seed: int = 1

    def options(self) -> dict[str, Any]:
        """The Cluster options every scenario takes from the traffic."""
        return {
            "replicas": self.replicas,
            "duplicates": self.duplicates,
            "budget_s": self.budget_s,
            "seed": self.seed,
        }


Scenario = Callable[[ClusterFactory, Traffic], Awaitable[Report]]
