"""The worker loop: read turns from the stream, reclaim those of dead workers, run them with
bounded concurrency, and ride out Redis outages with backoff instead of crashing."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket

import redis.exceptions

from bot.state.errors import REDIS_DOWN
from bot.state.queue import Entry
from bot.state.store import State
from bot.turn import Turn
from bot.worker.processor import TurnProcessor

log = logging.getLogger(__name__)

BLOCK_MS = 2000
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 10.0
SHUTDOWN_GRACE_S = 30.0
RETRYABLE: tuple[type[BaseException], ...] = (*REDIS_DOWN, redis.exceptions.ResponseError)


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class Worker:
    def __init__(
        self,
        state: State,
        processor: TurnProcessor,
        *,
        concurrency: int,
        claim_idle_s: float,
        name: str | None = None,
        block_ms: int = BLOCK_MS,
    ) -> None:
        self.state = state
        self.block_ms = block_ms  # how long a read waits for new turns (and so for a stop)
        self.processor = processor
        self.concurrency = concurrency
        self.claim_idle_ms = int(claim_idle_s * 1000)
        self.claim_every_s = max(claim_idle_s / 4, 0.05)
        self.name = name or consumer_name()
        self.active: dict[str, asyncio.Task[None]] = {}  # entry id -> its task

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set, then let running turns finish (up to a grace period)."""
        loop = asyncio.get_running_loop()
        backoff = BACKOFF_START_S
        next_claim = 0.0
        log.info("worker %s started (concurrency %d)", self.name, self.concurrency)
        while not stop.is_set():
            try:
                if len(self.active) >= self.concurrency:
                    await self._wait_for_a_slot(stop)
                    continue
                if loop.time() >= next_claim:
                    await self.state.queue.ensure_group()
                    claimed = await self.state.queue.claim_stale(
                        self.name, self.claim_idle_ms, count=self._free()
                    )
                    self._start(claimed)
                    next_claim = loop.time() + self.claim_every_s
                entries = await self.state.queue.read(
                    self.name, self._free(), 0 if self.state.handle.embedded else self.block_ms
                )
                self._start(entries)
                if not entries:
                    await self._idle(stop, next_claim - loop.time())
                backoff = BACKOFF_START_S
            except RETRYABLE as exc:
                log.warning(
                    "Redis problem in worker %s (%s: %s); retrying in %.1f s",
                    self.name,
                    type(exc).__name__,
                    exc,
                    backoff,
                )
                await _sleep_unless(stop, backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
        await self._finish_running()
        log.info("worker %s stopped", self.name)

    def _free(self) -> int:
        return max(self.concurrency - len(self.active), 1)

    def _start(self, entries: list[Entry]) -> None:
        for entry_id, turn in entries:
            if entry_id in self.active:
                continue  # already being handled here (reclaimed from ourselves)
            task = asyncio.create_task(self._handle(entry_id, turn))
            self.active[entry_id] = task

    async def _handle(self, entry_id: str, turn: Turn | None) -> None:
        try:
            await self.processor.handle(entry_id, turn)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The entry stays pending and is reclaimed after claim_idle_s.
            log.exception("handling turn %s failed; it will be retried", entry_id)
        finally:
            self.active.pop(entry_id, None)

    async def _wait_for_a_slot(self, stop: asyncio.Event) -> None:
        stopper = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait(
                [*self.active.values(), stopper], return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopper.cancel()

    async def _idle(self, stop: asyncio.Event, until_claim_s: float) -> None:
        """With the embedded Redis (which cannot block on reads), wait for an in-process
        enqueue; with a real Redis the blocking read already waited."""
        if not self.state.handle.embedded:
            return
        arrived = self.state.queue.arrived
        arrived.clear()
        waiters = [asyncio.create_task(arrived.wait()), asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(
                waiters,
                timeout=max(min(until_claim_s, 1.0), 0.01),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def _finish_running(self) -> None:
        if not self.active:
            return
        _, pending = await asyncio.wait(list(self.active.values()), timeout=SHUTDOWN_GRACE_S)
        for task in pending:
            task.cancel()  # left pending in the stream: another worker reclaims it
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
