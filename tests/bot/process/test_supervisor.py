"""The supervisor with small scripts for worker processes: restarts with a backoff, each
logged; a stop passed on as SIGTERM; one that ignores it killed; none left when cancelled."""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.process.restarts import RestartBackoff
from bot.process.supervisor import Supervisor, WorkerLaunch, exit_described
from tests.process_tree import running
from tests.waiting import until


@dataclass(frozen=True)
class ScriptLaunch(WorkerLaunch):
    """A worker process that runs ``script`` (given the lifeline's descriptor)."""

    script: str = ""

    def argv(self, lifeline_fd: int) -> list[str]:
        return [sys.executable, "-c", self.script, str(lifeline_fd)]


CRASHES = "import sys; sys.exit(3)"
# Each says it is up (its SIGTERM handler set) with a file named by its pid in $READY_DIR.
UP = "open(os.path.join(os.environ['READY_DIR'], str(os.getpid())), 'w').close()"
STOPS_ON_SIGTERM = f"""
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
{UP}
time.sleep(60)
"""
IGNORES_SIGTERM = f"""
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
{UP}
time.sleep(60)
"""


def quick() -> RestartBackoff:
    return RestartBackoff(first_s=0.05, max_s=0.2, steady_s=30.0)


def supervisor(
    script: str, ready: Path | None = None, count: int = 1, stop_within_s: float = 10.0
) -> Supervisor:
    launch = ScriptLaunch((), {"READY_DIR": str(ready)} if ready else {}, script=script)
    return Supervisor(count, launch, stop_within_s=stop_within_s, backoff=quick)


def up(ready: Path, workers: Supervisor) -> bool:
    """Every worker process is alive and has said it is up."""
    pids = workers.pids()
    return len(pids) == workers.count and all((ready / str(pid)).exists() for pid in pids)


async def test_a_worker_that_crashes_at_start_is_restarted_ever_later_each_time_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.process.supervisor")
    crashing = supervisor(CRASHES)
    stop = asyncio.Event()
    running_task = asyncio.create_task(crashing.run(stop))
    await until(lambda: crashing.restarts >= 4, 20)
    stop.set()
    await asyncio.wait_for(running_task, 10)
    restarts = [r.getMessage() for r in caplog.records if "starting it again" in r.getMessage()]
    assert len(restarts) >= 4
    assert "exited with code 3 after" in restarts[0]
    delays = [line.rsplit("again in ", 1)[1] for line in restarts[:4]]
    assert delays == ["0.05 s", "0.1 s", "0.2 s", "0.2 s"]
    assert crashing.health()["alive"] == 0 and await crashing.problem() == (
        "no worker process is alive (0 of 1)"
    )


async def test_a_stop_is_passed_on_as_sigterm_and_each_process_ends(tmp_path: Path) -> None:
    workers = supervisor(STOPS_ON_SIGTERM, tmp_path, count=2)
    stop = asyncio.Event()
    running_task = asyncio.create_task(workers.run(stop))
    await until(lambda: up(tmp_path, workers), 20)
    assert await workers.problem() is None
    assert workers.health() == {"alive": 2, "wanted": 2, "restarts": 0}
    processes = [slot.process for slot in workers.slots]
    stop.set()
    await asyncio.wait_for(running_task, 10)
    assert [p.returncode for p in processes if p is not None] == [0, 0]  # their own exit
    assert workers.alive() == 0 and workers.restarts == 0


async def test_one_that_ignores_sigterm_is_killed_after_stop_within_s(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stubborn = supervisor(IGNORES_SIGTERM, tmp_path, stop_within_s=0.5)
    stop = asyncio.Event()
    running_task = asyncio.create_task(stubborn.run(stop))
    await until(lambda: up(tmp_path, stubborn), 20)
    process = stubborn.slots[0].process
    assert process is not None
    stop.set()
    await asyncio.wait_for(running_task, 10)
    assert process.returncode == -9
    assert any("did not stop within 0.5 s; killing it" in r.getMessage() for r in caplog.records)


async def test_cancelled_it_leaves_no_worker_process(tmp_path: Path) -> None:
    workers = supervisor(IGNORES_SIGTERM, tmp_path, count=2)
    running_task = asyncio.create_task(workers.run(asyncio.Event()))
    await until(lambda: up(tmp_path, workers), 20)
    pids = workers.pids()
    running_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running_task
    await until(lambda: not any(running(pid) for pid in pids), 10)


def test_exits_in_words() -> None:
    assert exit_described(0) == "exited with code 0"
    assert exit_described(2) == "exited with code 2"
    assert exit_described(-9) == "was killed by SIGKILL"
    assert exit_described(-15) == "was killed by SIGTERM"
