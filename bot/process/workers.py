"""What answers a process's turns, as ``run.py`` drives it: the worker loop in the process
itself with its scheduler (:class:`WorkerLoop`, ``--workers 0``, and every worker process),
or worker processes beside it under a supervisor (bot/process/supervisor.py). Either runs
until its stop event is set, says what keeps the process from being ready, may add to
``/healthz``, and names what ``/metrics`` serves."""

from __future__ import annotations

import asyncio
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry

from bot.health.readiness import worker_check
from bot.schedules.scheduler import Scheduler
from bot.turn.worker.consumer import Worker


class Workers(Protocol):
    async def run(self, stop: asyncio.Event) -> None:
        """Answer turns until ``stop`` is set, then finish as a worker does."""
        ...

    async def problem(self) -> str | None:
        """For ``/readyz``: what is wrong, or None."""
        ...

    def health(self) -> dict[str, int] | None:
        """For ``/healthz``: what it reports about itself, if anything."""
        ...

    def registry(self) -> CollectorRegistry:
        """What ``/metrics`` serves."""
        ...


class WorkerLoop:
    """The worker loop in this process, and the scheduler beside it (every worker process
    fires schedules: bot/schedules/scheduler.py)."""

    def __init__(self, worker: Worker, scheduler: Scheduler) -> None:
        self.worker = worker
        self.scheduler = scheduler

    async def run(self, stop: asyncio.Event) -> None:
        """Both until ``stop`` is set; either failing stops the other, and its error is
        raised."""
        both = [
            asyncio.create_task(self.worker.run(stop)),
            asyncio.create_task(self.scheduler.run(stop)),
        ]
        try:
            await asyncio.gather(*both)
        finally:
            for task in both:
                task.cancel()
            await asyncio.gather(*both, return_exceptions=True)

    async def problem(self) -> str | None:
        return await worker_check(lambda: self.worker.alive)()

    def health(self) -> dict[str, int] | None:
        return None

    def registry(self) -> CollectorRegistry:
        return REGISTRY
