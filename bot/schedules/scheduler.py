"""The scheduler loop each worker process runs: once a tick (1 s) while anything is due,
else when the earliest schedule is next due but at least every ``IDLE_LOOK_S``, it reads the
schedules due from Redis and fires each (bot/schedules/firing.py) in a task of its own, at
most ``limit`` under way and ``at_once`` of them stepping at the same time, so an occurrence
fires within a second or two of its time whichever replicas run (a burst of 200 due at once
within 5 s on two replicas); the claim in Redis keeps the others off, and takes the
occurrence out of the due window the other schedulers read. What is due is read on Redis's
clock (the look reads it in the same step), not this process's. A tick that fails is logged
and the loop goes on; while Redis is down it backs off, saying so once. The sleep is
injectable (the store's clock takes an offset)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Protocol

from bot.agent.cancellation import sleep_unless
from bot.observability import metrics
from bot.schedules.firing import Failed, Fired, FireOne, FireOutcome, NotMine, Paused, Skipped
from bot.state.redis.errors import REDIS_DOWN, StateUnavailable
from bot.state.schedules import DueLook

log = logging.getLogger(__name__)

DUE_PER_TICK = 100  # the most occurrences a tick reads, and the most under way at once
FIRING_AT_ONCE = 16  # of those, the most whose firing steps run at the same time
LATE_AFTER_S = 5.0  # a run fired later than this after its time counts as late
BACKOFF_MAX_S = 10.0
# With nothing due, the next look comes when the earliest schedule is next due, but at most
# this long after the last: a schedule made (or resumed) on another replica, due sooner, is
# seen within it. A look after a second of quiet costs a worker about 0.7 ms of CPU (a cold
# connection), so looking every second when idle would triple an idle app's CPU.
IDLE_LOOK_S = 3.0
SOONEST_S = 0.05  # never look again sooner than this
REDIS_FAILURES: tuple[type[BaseException], ...] = (*REDIS_DOWN, StateUnavailable)


class DueIndex(Protocol):
    """Where the scheduler looks for the occurrences due (``ScheduleStore``)."""

    async def look(self, limit: int) -> DueLook: ...


Sleep = Callable[[float, asyncio.Event], Awaitable[object]]  # returns early once it is set


class Scheduler:
    def __init__(
        self,
        store: DueIndex,
        fire_one: FireOne,
        *,
        tick_s: float = 1.0,
        idle_s: float = IDLE_LOOK_S,
        limit: int = DUE_PER_TICK,
        at_once: int = FIRING_AT_ONCE,
        sleep: Sleep = sleep_unless,
    ) -> None:
        self.store = store
        self.fire_one = fire_one
        self.tick_s = tick_s
        self.idle_s = max(idle_s, tick_s)
        self.limit = limit
        self.sleep = sleep
        self.slots = asyncio.Semaphore(at_once)  # firings whose steps run now
        self.firing: dict[tuple[str, float], asyncio.Task[None]] = {}  # (id, occurrence)
        self.redis_down = False  # the last tick could not reach Redis (said once)

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until ``stop`` is set, then let the firings under way finish."""
        backoff = self.tick_s
        try:
            while not stop.is_set():
                wait = self.tick_s
                try:
                    look = await self._look()
                    self._start(look)
                    wait = self.wait_after(look)
                    backoff = self.tick_s
                except REDIS_FAILURES as exc:
                    wait, backoff = backoff, min(backoff * 2, BACKOFF_MAX_S)
                    self._outage(exc)
                except Exception:
                    log.exception("a scheduler tick failed")
                await self.sleep(wait, stop)
        finally:
            await self.settle()

    async def tick(self) -> list[asyncio.Task[None]]:
        """One look at the due index: a task firing each occurrence due that is not being
        fired here already, while fewer than ``limit`` are. The tasks started."""
        return self._start(await self._look())

    def wait_after(self, look: DueLook) -> float:
        """How long until the next look: a tick while anything is due or firing here; else
        until the earliest schedule is next due, within ``idle_s`` (and never under
        ``SOONEST_S``)."""
        if look.due or self.firing:
            return self.tick_s
        if look.next_due is None:
            return self.idle_s
        return min(max(look.next_due - look.now, SOONEST_S), self.idle_s)

    async def _look(self) -> DueLook:
        look = await self.store.look(self.limit)
        if self.redis_down:
            self.redis_down = False
            log.info("Redis is reachable again: schedules fire again")
        metrics.safely(partial(metrics.SCHEDULES_ACTIVE.set, look.active))
        return look

    def _start(self, look: DueLook) -> list[asyncio.Task[None]]:
        started = []
        for schedule_id, occurrence in look.due:
            key = (schedule_id, occurrence)
            if key in self.firing or len(self.firing) >= self.limit:
                continue
            task = asyncio.create_task(self._fire(schedule_id, occurrence, look.now))
            self.firing[key] = task
            task.add_done_callback(partial(self._done, key))
            started.append(task)
        return started

    async def settle(self) -> None:
        """Wait for the firings under way."""
        if self.firing:
            await asyncio.gather(*self.firing.values(), return_exceptions=True)

    def _done(self, key: tuple[str, float], _: asyncio.Task[None]) -> None:
        self.firing.pop(key, None)

    async def _fire(self, schedule_id: str, occurrence: float, now: float) -> None:
        try:
            async with self.slots:
                outcome = await self.fire_one(schedule_id, occurrence, now)
        except REDIS_FAILURES as exc:
            self._outage(exc)
        except Exception:
            log.exception("firing schedule %s at %s failed", schedule_id, occurrence)
        else:
            if isinstance(outcome, Failed):
                log.warning("schedule %s at %s: %s", schedule_id, occurrence, outcome.reason)
            elif isinstance(outcome, Skipped) and outcome.reason:
                log.warning(
                    "schedule %s at %s skipped, it kept failing: %s",
                    schedule_id,
                    occurrence,
                    outcome.reason,
                )
            metrics.safely(partial(record, outcome))
        finally:
            self.firing.pop((schedule_id, occurrence), None)  # (the done callback, if cancelled)

    def _outage(self, exc: BaseException) -> None:
        if not self.redis_down:
            log.warning(
                "Redis is unreachable (%s: %s): schedules wait until it is back",
                type(exc).__name__,
                exc,
            )
        self.redis_down = True


def record(outcome: FireOutcome) -> None:
    """An occurrence's outcome in the metrics (another holder's: nothing)."""
    match outcome:
        case Fired(skipped=skipped, late_s=late_s):
            metrics.SCHEDULE_RUNS.labels(outcome="fired").inc()
            if late_s > LATE_AFTER_S:
                metrics.SCHEDULE_RUNS_LATE.inc()
            if skipped:
                metrics.SCHEDULE_RUNS_MISSED.inc(skipped)
        case Skipped(missed=missed):
            metrics.SCHEDULE_RUNS.labels(outcome="skipped").inc()
            if missed:
                metrics.SCHEDULE_RUNS_MISSED.inc(missed)
        case Paused():
            metrics.SCHEDULE_RUNS.labels(outcome="paused").inc()
        case Failed():
            metrics.SCHEDULE_RUNS.labels(outcome="failed").inc()
        case NotMine():
            pass
