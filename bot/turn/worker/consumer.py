"""The worker loop: read turns from the stream, reclaim those of dead workers, run them with
bounded concurrency, post the notices owed to people, expire approval requests whose time
is up (and take their turns at once), and ride out Redis outages with backoff instead of
crashing.

Shutdown (SIGTERM): stop reading, let running turns finish within the grace period, then
hand the rest back at once so another replica resumes them from their records.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from functools import partial

from bot.agent.cancellation import Interrupted, sleep_unless, unless
from bot.observability import metrics
from bot.state.redis.errors import REDIS_DOWN, REDIS_RETRYABLE
from bot.state.redis.thread_key import ThreadKey
from bot.turn.model import Entry
from bot.turn.ports import DeliveryFailed, Responder, Undeliverable
from bot.turn.store.approvals import Overdue
from bot.turn.store.notices import GIVE_UP_AFTER_S, Notice, Notices
from bot.turn.store.queue import TurnQueue
from bot.turn.worker.gauges import sample_queue
from bot.turn.worker.processor import ThreadProcessor

log = logging.getLogger(__name__)

BLOCK_MS = 2000
# A read takes at most this many turns, so a burst spreads over every worker reading the
# stream (the processes of `run --workers N`, the replicas): the first to read does not take
# them all while the others wait, and a busy worker reads less often. At 50 threads at once
# on two worker processes, end-to-end ÷ critical path went from 1.57-1.63 to 1.26-1.37
# (docs/benchmarks.md).
READ_BATCH = 8
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 10.0
CLAIM_EVERY_MAX_S = 2.5  # how often, at most, a worker looks for turns of dead workers
HAND_BACK_WAIT_S = 5.0  # after the grace period, how long handing back may take
NOTICE_LEASE_S = 30.0
NOTICE_RETRY_MAX_S = 300.0
EXPIRY_EVERY_S = 1.0  # how often, at least, a worker looks for approval requests to expire
EXPIRY_EVERY_MAX_S = 30.0  # ... when requests are open that long (expiry_every)
EXPIRY_MIN_WAIT_S = 0.05  # and at most


def expiry_every(timeout_s: float) -> float:
    """How often a worker looks for approval requests to expire when it knows of none due:
    no longer apart than requests stay open (``approval.timeout_s``), so a request opened
    just after one look is found by the next one before its deadline, and the look after
    that is made at the deadline itself; at most every 30 s, which keeps an idle worker
    quiet with the default 15 minutes."""
    return min(max(timeout_s, EXPIRY_MIN_WAIT_S), EXPIRY_EVERY_MAX_S)


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class Worker:
    def __init__(
        self,
        queue: TurnQueue,
        processor: ThreadProcessor,
        notices: Notices,
        responder: Responder,
        *,
        concurrency: int,
        claim_idle_s: float,
        shutdown_grace_s: float = 25.0,
        embedded: bool = False,
        name: str | None = None,
        block_ms: int = BLOCK_MS,
        read_batch: int = READ_BATCH,
        expire_overdue: Callable[[], Awaitable[Overdue]] | None = None,
        expiry_every_s: float = EXPIRY_EVERY_S,
    ) -> None:
        """``expire_overdue``: expires the approval requests past their deadline, waking
        their turns, and says when the next is due (bot/turn/store/approvals.py)."""
        self.queue = queue
        self.processor = processor
        self.notices = notices
        self.responder = responder
        self.block_ms = block_ms  # how long a read waits for new turns (and so for a stop)
        self.read_batch = read_batch  # the most turns one read takes
        self.concurrency = concurrency
        self.claim_idle_ms = int(claim_idle_s * 1000)
        self.claim_every_s = min(max(claim_idle_s / 4, 0.05), CLAIM_EVERY_MAX_S)
        self.shutdown_grace_s = shutdown_grace_s
        self.embedded = embedded
        self.name = name or consumer_name()
        self.expire_overdue = expire_overdue
        self.expiry_every_s = expiry_every_s
        self.active: dict[str, asyncio.Task[None]] = {}  # entry id -> its task
        self.alive = False  # the loop runs (for readiness checks)

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set, then let running turns finish (up to the grace period)
        and hand back the rest."""
        loop = asyncio.get_running_loop()
        backoff = BACKOFF_START_S
        next_claim = 0.0
        log.info("worker %s started (concurrency %d)", self.name, self.concurrency)
        self.alive = True
        notices = asyncio.create_task(self._post_notices(stop))
        sampler = asyncio.create_task(sample_queue(self.queue, stop))
        expiry = asyncio.create_task(self._expire_overdue(stop))
        try:
            while not stop.is_set():
                try:
                    if len(self.active) >= self.concurrency:
                        await self._wait_for_a_slot(stop)
                        continue
                    if loop.time() >= next_claim:
                        await self.queue.ensure_group()
                        await self._claim()
                        next_claim = loop.time() + self.claim_every_s
                    entries = await self.queue.read(
                        self.name,
                        min(self._free(), self.read_batch),
                        0 if self.embedded else self.block_ms,
                    )
                    self._start(entries)
                    if not entries:
                        await self._idle(stop, next_claim - loop.time())
                    backoff = BACKOFF_START_S
                except REDIS_RETRYABLE as exc:
                    log.warning(
                        "Redis problem in worker %s (%s: %s); retrying in %.1f s",
                        self.name,
                        type(exc).__name__,
                        exc,
                        backoff,
                    )
                    await sleep_unless(backoff, stop)
                    backoff = min(backoff * 2, BACKOFF_MAX_S)
        finally:
            self.alive = False
            await self.queue.stop_reading()
            for task in (notices, sampler, expiry):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self._finish_running()
        log.info("worker %s stopped", self.name)

    async def _claim(self) -> None:
        """Take the entries idle long enough: a dead worker's, and turns a decision or an
        expiry woke."""
        claimed = await self.queue.claim_stale(self.name, self.claim_idle_ms, count=self._free())
        taken = sum(1 for entry in claimed if entry.entry_id not in self.active)
        if taken:
            metrics.safely(partial(metrics.TAKEOVERS.inc, taken))
        self._start(claimed)

    async def _expire_overdue(self, stop: asyncio.Event) -> None:
        """Expire the approval requests whose time is up and take the turns that waited for
        them at once (with a free slot; else the next worker to look takes them). It looks
        again when the next request known is due, and at least every ``expiry_every_s`` (for
        requests opened meanwhile: see :func:`expiry_every`): a request expires, and its turn
        goes on, at its deadline, not when its parked entry next comes round."""
        if self.expire_overdue is None:
            return
        while not stop.is_set():
            wait = self.expiry_every_s
            try:
                overdue = await self.expire_overdue()
                if overdue.expired:
                    log.info("%d approval request(s) expired", len(overdue.expired))
                    if len(self.active) < self.concurrency:
                        await self._claim()
                if overdue.next_due is not None:
                    wait = min(wait, max(overdue.next_due - time.time(), EXPIRY_MIN_WAIT_S))
            except REDIS_DOWN as exc:
                log.debug("could not look for approval requests to expire: %s", exc)
            except Exception:
                log.exception("expiring approval requests failed")
            await sleep_unless(wait, stop)

    def _free(self) -> int:
        return max(self.concurrency - len(self.active), 1)

    def _start(self, entries: list[Entry]) -> None:
        for entry in entries:
            if entry.entry_id in self.active:
                continue  # already being handled here (reclaimed from ourselves)
            self.active[entry.entry_id] = asyncio.create_task(self._handle(entry))

    async def _handle(self, entry: Entry) -> None:
        entry_id = entry.entry_id
        try:
            await self.processor.handle(entry)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The entry stays pending and is reclaimed after claim_idle_s.
            if isinstance(exc, REDIS_RETRYABLE):  # an outage, or a reply a failover explains
                log.warning(
                    "Redis failed while handling turn %s (%s: %s); it will be retried",
                    entry_id,
                    type(exc).__name__,
                    exc,
                )
            else:
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
        if not self.embedded:
            return
        arrived = self.queue.arrived
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
        log.info(
            "waiting up to %.0f s for %d running turn(s) to finish",
            self.shutdown_grace_s,
            len(self.active),
        )
        _, pending = await asyncio.wait(list(self.active.values()), timeout=self.shutdown_grace_s)
        if not pending:
            return
        log.warning("handing %d unfinished turn(s) back to other workers", len(pending))
        self.processor.hand_back()
        _, stuck = await asyncio.wait(pending, timeout=HAND_BACK_WAIT_S)
        for task in stuck:
            task.cancel()  # left pending in the stream: another worker reclaims it
        for task in stuck:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _post_notices(self, stop: asyncio.Event) -> None:
        """Post the plain messages owed to people, as soon as Slack takes them."""
        while not stop.is_set():
            try:
                for notice in await self.notices.take_due(NOTICE_LEASE_S):
                    await self._post_notice(notice)
            except REDIS_DOWN as exc:
                log.debug("could not look for notices: %s", exc)
            except Exception:
                log.exception("posting notices failed")
            await sleep_unless(self.claim_every_s, stop)

    async def _post_notice(self, notice: Notice) -> None:
        """Post one notice while holding its thread's lease: never beside another worker
        posting it, and in order with the thread's turns. A thread busy now is tried again
        at the next look."""
        thread = ThreadKey(notice.team, notice.channel, notice.thread_ts)
        lease = await self.processor.locks.try_acquire(thread, self.name)
        if lease is None:
            # A turn of the thread holds it (often the one that just gave up): soon again.
            await self.notices.due_again(notice, self.claim_every_s)
            return
        try:
            async with lease.kept_alive() as lost:
                outcome = await unless(self.responder.post_notice(notice, lease), lost)
            if isinstance(outcome, Interrupted):
                return  # due again once its take runs out
        except DeliveryFailed as exc:
            if time.time() - notice.since > GIVE_UP_AFTER_S:
                log.error("dropping the notice for turn %s: Slack refused it for a day", notice.id)
                await self.notices.done(notice)
                return
            delay = min(NOTICE_RETRY_MAX_S, 2.0 ** (notice.attempts + 1))
            log.warning("Slack did not take the notice for turn %s (%s)", notice.id, exc)
            await self.notices.retry_later(notice, delay)
            return
        except Undeliverable as exc:
            log.error("the notice for turn %s can never be posted: %s", notice.id, exc)
        finally:
            await lease.release()
        await self.notices.done(notice)
