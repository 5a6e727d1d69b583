"""The scheduler loop on the store's clock set to stand at chosen moments, and an injected
sleep: each tick fires what is due, each
occurrence once at a time, at most ``limit`` at once; two replicas' schedulers fire one run
once; a failing tick or firing is logged and the loop goes on; Redis down backs off and says
so once; the metrics by outcome."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

from bot.process.state import State
from bot.schedules.config import SchedulesConfig
from bot.schedules.firing import Failed, Fired, FireOutcome, NotMine, Paused, Skipped, firing_with
from bot.schedules.recurrence import Recurrence
from bot.schedules.scheduler import (
    BACKOFF_MAX_S,
    IDLE_LOOK_S,
    SOONEST_S,
    Scheduler,
    record,
)
from bot.state.redis.errors import StateUnavailable
from bot.state.schedules import DueLook, Schedule, ScheduleStore
from bot.turn.model import QueuedTurn
from tests.bot.schedules.firing_kit import CountingEnqueue, FakeHeadlines, FakeOwners, stand_at

HOURLY = Recurrence(cron="0 * * * *", at=None, timezone="UTC")
NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


async def make(store: ScheduleStore, owner: str, next_at: float) -> Schedule:
    made = await store.create(
        team="T1",
        owner=owner,
        channel="C0OPS",
        prompt="Any news?",
        recurrence=HOURLY,
        next_at=next_at,
        max_per_person=10,
        by=owner,
    )
    assert isinstance(made, Schedule)
    return made


@dataclass
class HeldFirings:
    """A ``fire_one`` that records its calls and holds each until released."""

    calls: list[tuple[str, float, float]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    outcome: FireOutcome = field(default_factory=NotMine)

    async def __call__(self, schedule_id: str, occurrence: float, now: float) -> FireOutcome:
        self.calls.append((schedule_id, occurrence, now))
        await self.release.wait()
        return self.outcome


@dataclass
class Ticks:
    """The loop's sleep: records each wait and sets ``stop`` after ``count`` of them."""

    count: int
    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float, stop: asyncio.Event) -> bool:
        self.waits.append(seconds)
        if len(self.waits) >= self.count:
            stop.set()
        await asyncio.sleep(0)  # the firings started run meanwhile
        return stop.is_set()


@pytest.mark.cluster
async def test_a_tick_fires_each_occurrence_due_once_at_a_time(state: State) -> None:
    store = state.shared.schedules
    await make(store, "U1", NINE)
    await make(store, "U2", NINE + 10)
    await make(store, "U3", NINE + HOUR)
    firings = HeldFirings()
    await stand_at(store, NINE + 20)
    scheduler = Scheduler(store, firings)
    started = await scheduler.tick()
    assert len(started) == 2
    await asyncio.sleep(0)
    assert sorted(call[:2] for call in firings.calls) == [("s1", NINE), ("s2", NINE + 10)]
    assert all(now == pytest.approx(NINE + 20, abs=0.2) for _, _, now in firings.calls)
    assert await scheduler.tick() == []  # under way: not fired again alongside
    active = REGISTRY.get_sample_value("slack_agent_schedules_active")
    assert active == 3
    firings.release.set()
    await asyncio.gather(*started)
    assert scheduler.firing == {}
    assert len(await scheduler.tick()) == 2  # (this fake never advances them)
    await scheduler.settle()


@pytest.mark.cluster
async def test_idle_it_looks_again_when_the_next_is_due_but_at_least_every_few_seconds(
    state: State,
) -> None:
    """Nothing due: the next look comes when the earliest schedule is due (never sooner than
    SOONEST_S), or IDLE_LOOK_S at the latest (a schedule made on another replica is seen
    within it); while anything is due or firing, every tick."""
    store = state.shared.schedules
    scheduler = Scheduler(store, HeldFirings())
    await stand_at(store, NINE - 100)
    empty = await store.look(10)
    assert empty.next_due is None
    assert scheduler.wait_after(empty) == IDLE_LOOK_S
    await make(store, "U1", NINE)
    await stand_at(store, NINE - 1.5)
    soon = await store.look(10)
    assert soon.due == [] and soon.next_due == NINE
    assert scheduler.wait_after(soon) == pytest.approx(1.5, abs=0.2)
    await stand_at(store, NINE - 0.01)
    assert scheduler.wait_after(await store.look(10)) == SOONEST_S
    await stand_at(store, NINE - HOUR)
    assert scheduler.wait_after(await store.look(10)) == IDLE_LOOK_S
    await stand_at(store, NINE + 1)
    due = await store.look(10)
    assert due.due == [("s1", NINE)]
    assert scheduler.wait_after(due) == scheduler.tick_s


async def test_the_loop_sleeps_as_wait_after_says(state: State) -> None:
    store = state.shared.schedules
    await make(store, "U1", NINE)
    await stand_at(store, NINE - 2)
    ticks = Ticks(count=1)
    await Scheduler(store, HeldFirings(), sleep=ticks).run(asyncio.Event())
    assert ticks.waits == [pytest.approx(2.0, abs=0.2)]


async def test_a_tick_fires_at_most_limit_at_once(state: State) -> None:
    store = state.shared.schedules
    for n in range(5):
        await make(store, f"U{n}", NINE + n)
    firings = HeldFirings()
    await stand_at(store, NINE + 60)
    scheduler = Scheduler(store, firings, limit=2)
    assert len(await scheduler.tick()) == 2
    assert await scheduler.tick() == []
    firings.release.set()
    await scheduler.settle()
    assert len(firings.calls) == 2


async def test_a_tick_takes_up_to_limit_and_fires_at_once_at_most_at_once(state: State) -> None:
    store = state.shared.schedules
    for n in range(12):
        await make(store, f"U{n}", NINE + n)
    firings = HeldFirings()
    await stand_at(store, NINE + 60)
    scheduler = Scheduler(store, firings, limit=10, at_once=3)
    assert len(await scheduler.tick()) == 10
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(firings.calls) == 3  # the others wait for a slot
    firings.release.set()
    await scheduler.settle()
    assert len(firings.calls) == 10


@pytest.mark.cluster
async def test_two_replicas_schedulers_fire_a_run_once(state: State) -> None:
    store = state.shared.schedules
    await make(store, "U1", NINE)
    headlines, owners = FakeHeadlines(), FakeOwners()
    enqueue = CountingEnqueue(state.threads.queue.enqueue)
    await stand_at(store, NINE + 0.3)
    replicas = [
        Scheduler(
            store,
            firing_with(store, headlines, owners, enqueue, holder=name, config=SchedulesConfig()),
        )
        for name in ("replica-1", "replica-2")
    ]
    runs = await asyncio.gather(*(replica.tick() for replica in replicas))
    await asyncio.gather(*(task for started in runs for task in started))
    assert len(headlines.posts) == 1 and len([e for e in enqueue.entry_ids if e]) == 1
    await state.threads.queue.ensure_group()
    queued = await state.threads.queue.read("reader", 10, 0)
    assert [type(entry) for entry in queued] == [QueuedTurn]
    assert await store.due(NINE + HOUR - 1, 5) == []
    for replica in replicas:  # the next tick finds nothing due
        assert await replica.tick() == []


@pytest.mark.cluster
async def test_runs_that_keep_failing_do_not_hold_up_the_next_one_due(state: State) -> None:
    """25 schedules whose headline always fails (for a while: each is tried again once its
    claim lapses) are due before a 26th: it fires within a few seconds of its time all the
    same, as a claim takes its occurrence out of the due window until the lease's end."""
    store = state.shared.schedules
    for n in range(25):
        made = await store.create(
            team="T1",
            owner=f"U{n}",
            channel="C0BROKEN",
            prompt="Any news?",
            recurrence=HOURLY,
            next_at=NINE + n,
            max_per_person=10,
            by=f"U{n}",
        )
        assert isinstance(made, Schedule)
    await make(store, "U99", NINE + 30)
    headlines = FakeHeadlines(failures_in={"C0BROKEN": RuntimeError("internal_error")})
    enqueue = CountingEnqueue(state.threads.queue.enqueue)
    fire_one = firing_with(
        store, headlines, FakeOwners(), enqueue, holder="replica-1", config=SchedulesConfig()
    )
    now = NINE + 30
    scheduler = Scheduler(store, fire_one, limit=20)
    for _ in range(5):
        now += 1
        await stand_at(store, now)
        await asyncio.gather(*await scheduler.tick())
        if headlines.posts:
            break
    assert [(p.schedule, p.occurrence) for p in headlines.posts] == [("s26", NINE + 30)]
    assert now <= NINE + 30 + 5  # the bound
    assert [t.user for t in enqueue.turns] == ["U99"]


@dataclass
class FlakyIndex:
    """A due index that fails its first looks with ``failures`` in order."""

    failures: list[Exception]
    looks: int = 0

    async def look(self, limit: int) -> DueLook:
        self.looks += 1
        if self.failures:
            raise self.failures.pop(0)
        return DueLook([("s1", NINE)], 1, NINE)


async def test_redis_down_backs_off_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    down: list[Exception] = [StateUnavailable("Redis is unreachable") for _ in range(5)]
    index = FlakyIndex(down)
    firings = HeldFirings()
    firings.release.set()
    ticks = Ticks(count=8)
    caplog.set_level(logging.INFO, logger="bot.schedules.scheduler")
    await Scheduler(index, firings, sleep=ticks).run(asyncio.Event())
    assert ticks.waits == [1, 2, 4, 8, BACKOFF_MAX_S, 1, 1, 1]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("Redis is unreachable" in m for m in messages) == 1
    assert sum("reachable again" in m for m in messages) == 1
    assert len(firings.calls) == 3  # one firing a tick once Redis is back


async def test_a_failing_tick_or_firing_is_logged_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    index = FlakyIndex([RuntimeError("a bug in a tick")])
    broken = 0

    async def fire_one(schedule_id: str, occurrence: float, now: float) -> FireOutcome:
        nonlocal broken
        broken += 1
        raise RuntimeError("a bug in a firing")

    ticks = Ticks(count=3)
    await Scheduler(index, fire_one, sleep=ticks).run(asyncio.Event())
    assert index.looks == 3 and broken == 2
    assert ticks.waits == [1, 1, 1]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [
        "a scheduler tick failed",
        f"firing schedule s1 at {NINE} failed",
        f"firing schedule s1 at {NINE} failed",
    ]


class Deltas:
    """The change of the schedule counters since it was made."""

    NAMES: tuple[tuple[str, dict[str, str]], ...] = (
        ("slack_agent_schedule_runs_total", {"outcome": "fired"}),
        ("slack_agent_schedule_runs_total", {"outcome": "skipped"}),
        ("slack_agent_schedule_runs_total", {"outcome": "paused"}),
        ("slack_agent_schedule_runs_total", {"outcome": "failed"}),
        ("slack_agent_schedule_runs_late_total", {}),
        ("slack_agent_schedule_runs_missed_total", {}),
    )

    def __init__(self) -> None:
        self.before = [self._value(name, labels) for name, labels in self.NAMES]

    @staticmethod
    def _value(name: str, labels: dict[str, str]) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    def now(self) -> list[float]:
        return [
            self._value(name, labels) - before
            for (name, labels), before in zip(self.NAMES, self.before, strict=True)
        ]


def test_the_metrics_by_outcome() -> None:
    deltas = Deltas()
    record(Fired("1.1", "e1", skipped=0, late_s=0.4))
    record(Fired("1.2", None, skipped=2, late_s=5.1))
    record(Skipped(3))
    record(Paused("owner left the workspace"))
    record(Failed("posting the headline failed: X"))
    record(NotMine())
    # fired, skipped, paused, failed, late, missed
    assert deltas.now() == [2, 1, 1, 1, 1, 5]
