"""A supervisor's /metrics: its own registry and its worker processes' files, as one."""

from __future__ import annotations

import os
import subprocess
import sys

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.metrics_core import Metric

from bot.observability.process_metrics import DIRECTORY_VARIABLE, WorkerMetrics, merged


def family(name: str, kind: str, *samples: tuple[str, dict[str, str], float]) -> Metric:
    made = Metric(name, f"{name} help", kind)
    for sample_name, labels, value in samples:
        made.add_sample(sample_name, labels, value)
    return made


def values(families: list[Metric]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def test_one_family_per_name_counters_summed_gauges_the_largest() -> None:
    families = merged(
        [
            family(
                "turns",
                "counter",
                ("turns_total", {"outcome": "answered"}, 2.0),
                ("turns_created", {"outcome": "answered"}, 200.0),
            ),
            family("depth", "gauge", ("depth", {}, 0.0)),
            family("info", "info", ("info_info", {"v": "1"}, 1.0)),
            family(
                "turns",
                "counter",
                ("turns_total", {"outcome": "answered"}, 3.0),
                ("turns_total", {"outcome": "failed"}, 1.0),
                ("turns_created", {"outcome": "answered"}, 100.0),
            ),
            family("depth", "gauge", ("depth", {}, 7.0)),
            family(
                "seconds",
                "histogram",
                ("seconds_bucket", {"le": "1.0"}, 1.0),
                ("seconds_count", {}, 1.0),
            ),
            family(
                "seconds",
                "histogram",
                ("seconds_bucket", {"le": "1.0"}, 2.0),
                ("seconds_count", {}, 3.0),
            ),
        ]
    )
    assert [f.name for f in families] == ["turns", "depth", "info", "seconds"]
    assert values(families) == {
        ("turns_total", (("outcome", "answered"),)): 5.0,
        ("turns_created", (("outcome", "answered"),)): 100.0,  # the earliest
        ("turns_total", (("outcome", "failed"),)): 1.0,
        ("depth", ()): 7.0,
        ("info_info", (("v", "1"),)): 1.0,
        ("seconds_bucket", (("le", "1.0"),)): 3.0,
        ("seconds_count", ()): 4.0,
    }


WORKER = """
from bot.observability import metrics
metrics.TURNS.labels("answered").inc(2)
metrics.QUEUE_DEPTH.set(4)
"""


def test_what_a_worker_process_recorded_is_served_with_the_supervisors_own() -> None:
    own = CollectorRegistry()
    turns = Counter("slack_agent_turns", "Turns.", ["outcome"], registry=own)
    turns.labels("answered").inc()
    Gauge("slack_agent_queue_depth", "Depth.", registry=own)  # 0: no worker loop here
    files = WorkerMetrics(own)
    try:
        env = {**os.environ, **files.environment()}
        assert env[DIRECTORY_VARIABLE] == str(files.directory)
        worker = subprocess.run([sys.executable, "-c", WORKER], env=env, check=True, timeout=30)
        exposition = generate_latest(files.registry).decode()
        assert 'slack_agent_turns_total{outcome="answered"} 3.0' in exposition
        assert "slack_agent_queue_depth 4.0" in exposition
        assert exposition.count("# TYPE slack_agent_turns_total counter") == 1
        # The process is gone: its gauges are forgotten, its counters still count.
        files.process_gone(_pid_of(files))
        exposition = generate_latest(files.registry).decode()
        assert "slack_agent_queue_depth 0.0" in exposition
        assert 'slack_agent_turns_total{outcome="answered"} 3.0' in exposition
        assert worker.returncode == 0
    finally:
        files.close()
    assert not files.directory.exists()


def _pid_of(files: WorkerMetrics) -> int:
    """The pid of the one process that wrote into ``files`` (its files are named by it)."""
    [pid] = {int(path.stem.rsplit("_", 1)[1]) for path in files.directory.glob("*.db")}
    return pid
