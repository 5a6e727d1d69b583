"""The metrics of a supervisor's worker processes, served on the supervisor's ``/metrics``
beside its own, as one exposition.

Worker processes started by a supervisor record their metrics in files
(prometheus_client's multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR``, a directory the
supervisor makes for them and removes when it stops). The supervisor keeps its own metrics
in its default registry as any process does, and its ``/metrics`` merges the two: one family
per name; a sample both have (the same name and labels) is summed for counters and
histograms (each process counts its own events) and keeps the larger value for gauges
(the queue gauges read one shared Redis). A counter keeps what a worker process that died
had counted; a gauge forgets the processes that are gone.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

DIRECTORY_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"  # read by prometheus_client at import


def merged(families: Iterable[Metric]) -> list[Metric]:
    """``families`` with those of one name made one (pure)."""
    by_name: dict[str, Metric] = {}
    samples: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], Sample]] = {}
    for family in families:
        kept = by_name.get(family.name)
        if kept is None:
            kept = by_name[family.name] = Metric(
                family.name, family.documentation, family.type, family.unit
            )
            samples[family.name] = {}
        found = samples[family.name]
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            before = found.get(key)
            if before is None:
                found[key] = sample
            elif sample.name.endswith("_created"):  # when counting began: the earliest
                found[key] = before._replace(value=min(before.value, sample.value))
            elif kept.type == "gauge":
                found[key] = before._replace(value=max(before.value, sample.value))
            else:
                found[key] = before._replace(value=before.value + sample.value)
    for name, family in by_name.items():
        family.samples = list(samples[name].values())
    return list(by_name.values())


class ProcessesCollector(Collector):
    """This process's registry and the worker processes' files, merged."""

    def __init__(self, own: CollectorRegistry, directory: Path) -> None:
        self.own = own
        self.workers = MultiProcessCollector(None, path=str(directory))  # type: ignore[no-untyped-call]

    def collect(self) -> Iterator[Metric]:
        workers = self.workers.collect()  # type: ignore[no-untyped-call]
        yield from merged([*self.own.collect(), *workers])


class WorkerMetrics:
    """The directory worker processes record their metrics in, for one supervisor."""

    def __init__(self, own: CollectorRegistry = REGISTRY) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="slack-agent-metrics-"))
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(ProcessesCollector(own, self.directory))

    def environment(self) -> dict[str, str]:
        """What a worker process's environment adds, so it records here."""
        return {DIRECTORY_VARIABLE: str(self.directory)}

    def process_gone(self, pid: int) -> None:
        """Forget the gauges of a worker process that ended (its counters still count)."""
        mark_process_dead(pid, str(self.directory))  # type: ignore[no-untyped-call]

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
