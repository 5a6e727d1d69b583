"""The fault scenarios, shared by the tests (a little traffic) and benchmarks/faults.py (more).

Each scenario is ``async def scenario(make, traffic, ...) -> Report``: it builds its
cluster with ``make`` (which decides where it lives and cleans it up), injects its fault
while people write, and returns the full report with its own checks added.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bot.state.audit import AuditKind
from tests.faults.cluster import Cluster
from tests.faults.invariants import Report
from tests.faults.script import Question

STEP_IN_ARGUMENTS = re.compile(r'"name":\s*"([^"]+)"')  # a fault tool's step, in its arguments


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


async def add_step_checks(
    report: Report, cluster: Cluster, finished: str, running: str, fault: str
) -> None:
    """The tool step that had finished before ``fault`` ran once; the one running then ran at
    most twice (once more to finish the turn)."""
    done, cut = await cluster.starts(finished), await cluster.starts(running)
    report.add(f"{finished} (finished before {fault}) ran once", done == 1, _starts(done))
    report.add(f"{running} (running at {fault}) ran at most twice", 1 <= cut <= 2, _starts(cut))


async def step_audit(cluster: Cluster, question: Question) -> dict[str, list[str]]:
    """The outcome of each audit entry of each tool step of ``question``, oldest first."""
    found: dict[str, list[str]] = {}
    for entry in reversed(await cluster.audit()):
        if entry.kind != AuditKind.TOOL:
            continue
        named = STEP_IN_ARGUMENTS.search(str(entry.detail.get("arguments", "")))
        if named and named[1].startswith(question.step_prefix):
            found.setdefault(named[1], []).append(entry.outcome)
    return found


async def add_audit_checks(report: Report, cluster: Cluster, question: Question) -> None:
    """Every tool step of ``question`` is in the audit log once a run, whichever replica
    settled the turn: a run that saved its result by its outcome, a run a fault cut off
    (its result never saved) as Interrupted."""
    audited = await step_audit(cluster, question)
    starts: dict[str, int] = {}
    for run in await cluster.runs():
        if run.event == "start" and run.name.startswith(question.step_prefix):
            starts[run.name] = starts.get(run.name, 0) + 1
    names = sorted(set(starts) | set(audited))
    report.add(
        f"each tool step of {question.text} is audited once a run",
        bool(names) and all(len(audited.get(n, [])) == starts.get(n, 0) for n in names),
        "; ".join(
            f"{n}: {starts.get(n, 0)} run(s), audited {' + '.join(audited.get(n, [])) or 'never'}"
            for n in names
        )
        or "no step ran",
    )


def _starts(count: int) -> str:
    return "runs unknown (Redis away)" if count < 0 else f"{count} start{'' if count == 1 else 's'}"
