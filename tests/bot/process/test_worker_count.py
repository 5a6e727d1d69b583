"""How many worker processes a command runs (pure)."""

from __future__ import annotations

import os

import pytest

from bot.config.errors import ConfigError
from bot.process.worker_count import cpu_count, worker_processes


def test_the_default_is_one_per_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    assert worker_processes(None, option="--workers", embedded=False, cpus=4) == 4
    assert cpu_count() == (os.cpu_count() or 1)
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # the platform cannot tell
    assert cpu_count() == 1


def test_a_number_given_wins_and_0_means_in_this_process() -> None:
    assert worker_processes(3, option="--workers", embedded=False, cpus=2) == 3
    assert worker_processes(0, option="--workers", embedded=False, cpus=2) == 0


def test_with_the_embedded_redis_the_worker_runs_in_the_process() -> None:
    assert worker_processes(None, option="--workers", embedded=True, cpus=8) == 0
    assert worker_processes(0, option="--processes", embedded=True, cpus=8) == 0
    with pytest.raises(ConfigError) as refused:
        worker_processes(2, option="--processes", embedded=True, cpus=8)
    message = str(refused.value)
    assert message.startswith("--processes 2: worker processes need REDIS_URL")
    assert "give --processes 0" in message


def test_a_negative_number_is_refused_naming_the_option() -> None:
    with pytest.raises(ConfigError, match=r"^--workers -1: give 0 or more"):
        worker_processes(-1, option="--workers", embedded=False, cpus=2)
