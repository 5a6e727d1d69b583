"""The supervisor: N worker processes (``slack-agent worker --processes 0`` with the same
config and environment) kept running beside this process.

A worker process that ends while the supervisor runs, whatever its exit, is started again
after a backoff (bot/process/restarts.py: soon after a steady one, later and later while
each dies young), and each restart is logged and counted. A stop is passed on to every
worker process as SIGTERM (each runs in a session of its own, so a terminal's Ctrl-C
reaches them through the supervisor only): each stops reading the queue and hands its turns
back as any worker does (``queue.shutdown_grace_s``); one still running ``stop_within_s``
later is killed. The worker processes hold on to the supervisor's lifeline
(bot/process/lifeline.py): if the supervisor is killed, they die at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from prometheus_client import REGISTRY, CollectorRegistry

from bot.agent.cancellation import Interrupted, sleep_unless, unless
from bot.observability import metrics
from bot.observability.process_metrics import WorkerMetrics
from bot.process.lifeline import Lifeline
from bot.process.restarts import RestartBackoff

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerLaunch:
    """How each worker process starts: ``python -m bot.cli`` with ``arguments`` (up to and
    including the ``worker`` command's own), in this process's environment with
    ``environment`` added."""

    arguments: tuple[str, ...]
    environment: Mapping[str, str] = field(default_factory=dict)

    def argv(self, lifeline_fd: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "bot.cli",
            *self.arguments,
            "--supervisor-pipe",
            str(lifeline_fd),
        ]


def exit_described(returncode: int) -> str:
    """How a process ended, in words (pure)."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


@dataclass
class Slot:
    """One of the N places a worker process runs in, one process at a time."""

    number: int  # 1 to N
    backoff: RestartBackoff
    process: asyncio.subprocess.Process | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None


class Supervisor:
    def __init__(
        self,
        count: int,
        launch: WorkerLaunch,
        *,
        stop_within_s: float,
        metrics_files: WorkerMetrics | None = None,
        backoff: Callable[[], RestartBackoff] = RestartBackoff,
    ) -> None:
        if count < 1:
            raise ValueError(f"a supervisor needs at least one worker process, not {count}")
        self.count = count
        self.launch = launch
        self.stop_within_s = stop_within_s
        self.metrics_files = metrics_files
        self.slots = [Slot(number, backoff()) for number in range(1, count + 1)]
        self.restarts = 0

    def alive(self) -> int:
        return sum(slot.alive for slot in self.slots)

    def pids(self) -> list[int]:
        return [slot.process.pid for slot in self.slots if slot.process and slot.alive]

    async def problem(self) -> str | None:
        """For ``/readyz``: nothing while at least one worker process is alive."""
        if self.alive():
            return None
        return f"no worker process is alive (0 of {self.count})"

    def health(self) -> dict[str, int]:
        """For ``/healthz``: worker processes alive, wanted, and restarted so far."""
        return {"alive": self.alive(), "wanted": self.count, "restarts": self.restarts}

    def registry(self) -> CollectorRegistry:
        """For ``/metrics``: this process's metrics and its worker processes'."""
        return self.metrics_files.registry if self.metrics_files is not None else REGISTRY

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the worker processes running until ``stop`` is set; then stop them all and
        return once every one has ended."""
        lifeline = Lifeline()
        environment = {**os.environ, **self.launch.environment}
        if self.metrics_files is not None:
            environment.update(self.metrics_files.environment())
        log.warning("slack-agent supervising %d worker process(es)", self.count)
        try:
            await asyncio.gather(
                *(self._keep(slot, lifeline, environment, stop) for slot in self.slots)
            )
        finally:
            for slot in self.slots:  # only when cancelled: no worker outlives this
                if slot.alive and slot.process is not None:
                    with contextlib.suppress(ProcessLookupError):
                        slot.process.kill()
            lifeline.close()
            self._count_alive()

    async def _keep(
        self, slot: Slot, lifeline: Lifeline, environment: dict[str, str], stop: asyncio.Event
    ) -> None:
        first = True
        while not stop.is_set():
            if not first:
                self.restarts += 1
                metrics.safely(metrics.WORKER_RESTARTS.inc)
            first = False
            started = time.monotonic()
            try:
                process = await asyncio.create_subprocess_exec(
                    *self.launch.argv(lifeline.read_fd),
                    env=environment,
                    stdin=asyncio.subprocess.DEVNULL,
                    pass_fds=(lifeline.read_fd,),
                    # Signals reach it only through the supervisor (a terminal's Ctrl-C
                    # goes to the supervisor's group alone), so a stop is never mistaken
                    # for a death to restart from.
                    start_new_session=True,
                )
            except OSError as exc:
                ended = f"could not be started ({exc})"
            else:
                slot.process = process
                self._count_alive()
                log.info(
                    "worker process %d of %d started (pid %d)", slot.number, self.count, process.pid
                )
                if isinstance(await unless(process.wait(), stop), Interrupted):
                    break
                self._gone(process)
                assert process.returncode is not None
                ended = f"(pid {process.pid}) {exit_described(process.returncode)}"
            ran_s = time.monotonic() - started
            delay = slot.backoff.after_exit(ran_s)
            log.warning(
                "worker process %d %s after %.1f s; starting it again in %g s",
                slot.number,
                ended,
                ran_s,
                delay,
            )
            if not await sleep_unless(delay, stop):
                break
        await self._stop(slot)

    async def _stop(self, slot: Slot) -> None:
        process = slot.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), self.stop_within_s)
        except TimeoutError:
            log.warning(
                "worker process %d (pid %d) did not stop within %g s; killing it",
                slot.number,
                process.pid,
                self.stop_within_s,
            )
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        assert process.returncode is not None
        log.info(
            "worker process %d (pid %d) stopped: %s",
            slot.number,
            process.pid,
            exit_described(process.returncode),
        )
        self._gone(process)

    def _gone(self, process: asyncio.subprocess.Process) -> None:
        self._count_alive()
        if self.metrics_files is not None:
            self.metrics_files.process_gone(process.pid)

    def _count_alive(self) -> None:
        metrics.safely(lambda: metrics.WORKER_PROCESSES.set(self.alive()))
