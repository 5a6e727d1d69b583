"""What the scheduler (issue 34) costs on a real Redis (REDIS_URL, default 127.0.0.1:6379),
with the real ``ScheduleStore`` and ``TurnQueue`` and in-process fakes of its Slack ports
(a run's headline, whether its owner left: tests/bot/schedules/firing_kit.py):

- an idle tick (the scheduler's look at the due index, nothing due) with 0, 100 and 1,000
  schedules stored: Redis round trips, bytes on the wire (both directions, counted in this
  process) and this process's CPU per tick, back to back, and at the largest count also
  ticks a second apart, as a worker runs them;
- a fired run (claim, headline recorded, the turn queued as a mention's, advance; the
  store's clock set 60 days on, to the run's time), and
  separately the run's outcome kept when its turn ends (``record_outcome``);
- a burst: schedules all due at one moment, fired by two schedulers in this process
  standing in for two replicas (each with its own connections and holder name), started in
  the same phase of their tick and half a tick apart: how long after the moment the last
  run was queued, and that each run was queued exactly once (the runs' turns in the queue,
  the ``Fired`` outcomes).

Run: uv run python -m benchmarks.schedules [--ticks N] [--runs N] [--burst N]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from redis.asyncio.connection import Connection

from benchmarks.redis_prefix import delete_prefix
from bot.config.schema import AppConfig
from bot.process.state import State, open_state
from bot.schedules.config import SchedulesConfig
from bot.schedules.firing import Enqueue, Fired, FireOne, FireOutcome, NotMine, firing_with
from bot.schedules.recurrence import Recurrence
from bot.schedules.scheduler import DUE_PER_TICK, Scheduler
from bot.state.schedules import Schedule, ScheduleStore
from bot.turn.model import Turn
from tests.bot.schedules.firing_kit import FakeHeadlines, FakeOwners, stand_at
from tests.fakes.round_trips import counting_round_trips

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
HOURLY = Recurrence(cron="0 * * * *", at=None, timezone="UTC")
YEARLY = Recurrence(cron="0 9 1 1 *", at=None, timezone="UTC")  # a burst's: due once here
OWNERS = 100  # the schedules stored are spread over this many people
DAY = 24 * 3600.0
WARM_UP = 20  # calls before each measured batch: scripts loaded, connections made


@dataclass(frozen=True)
class Sizes:
    """How much is measured: ``ticks`` idle ticks back to back at each of ``stored`` counts
    of schedules, ``spaced`` ticks a tick apart at the largest, ``runs`` fired runs, bursts
    of ``burst`` schedules made ``lead_s`` before their moment."""

    ticks: int = 2000
    stored: tuple[int, ...] = (0, 100, 1000)
    spaced: int = 10
    runs: int = 200
    burst: int = 200
    lead_s: float = 2.0


@dataclass(frozen=True)
class PerCall:
    """What one call costs: Redis round trips, bytes on the wire (sent + received) and this
    process's CPU in microseconds."""

    round_trips: float
    wire_bytes: float
    cpu_us: float


@dataclass(frozen=True)
class Burst:
    """A burst fired by two schedulers: ``all_queued_s`` and ``median_s`` after the moment
    the runs were due; the runs' turns in the queue (``queued`` distinct runs, ``extra``
    entries beyond one a run); the outcomes (``fired``, ``not_mine``: a claim another
    scheduler held); round trips and CPU a run from the moment until the last advance."""

    label: str
    schedules: int
    all_queued_s: float
    median_s: float
    queued: int
    extra: int
    fired: int
    not_mine: int
    round_trips: float
    cpu_ms: float


@dataclass(frozen=True)
class Figures:
    sizes: Sizes
    idle: dict[int, PerCall]  # by schedules stored
    spaced: PerCall  # idle ticks a tick apart, at the largest count
    fired: PerCall
    outcome: PerCall
    bursts: list[Burst]


@dataclass
class Wire:
    sent: int = 0
    received: int = 0


@contextmanager
def counting_bytes() -> Iterator[Wire]:
    """Bytes on the wire in this process during the block: what redis-py writes
    (``Connection.send_packed_command``) and what every stream reader is fed
    (``StreamReader.feed_data``: here only Redis's connections read streams)."""
    wire = Wire()
    send, feed = Connection.send_packed_command, asyncio.StreamReader.feed_data

    async def counted_send(self: Connection, command: Any, check_health: bool = True) -> None:
        if not isinstance(command, bytes | str):
            command = list(command)  # (an iterator, read once)
        chunks = command if isinstance(command, list) else [command]
        wire.sent += sum(len(c.encode() if isinstance(c, str) else c) for c in chunks)
        await send(self, command, check_health)

    def counted_feed(self: asyncio.StreamReader, data: bytes) -> None:
        wire.received += len(data)
        feed(self, data)

    Connection.send_packed_command = counted_send  # type: ignore[method-assign,assignment]
    asyncio.StreamReader.feed_data = counted_feed  # type: ignore[method-assign,assignment]
    try:
        yield wire
    finally:
        Connection.send_packed_command = send  # type: ignore[method-assign]
        asyncio.StreamReader.feed_data = feed  # type: ignore[method-assign]


async def per_call(calls: Sequence[Callable[[], Awaitable[object]]]) -> PerCall:
    """Each of ``calls`` made in turn: what one costs, on average."""
    with counting_round_trips() as trips, counting_bytes() as wire:
        started = time.process_time()
        for call in calls:
            await call()
        cpu = time.process_time() - started
    n = len(calls)
    return PerCall(trips.sent / n, (wire.sent + wire.received) / n, cpu / n * 1e6)


async def spaced_ticks(scheduler: Scheduler, ticks: int) -> PerCall:
    """``ticks`` ticks ``scheduler.tick_s`` apart: each one's cost, the sleeps left out."""
    trips = wire_bytes = 0
    cpu = 0.0
    for _ in range(ticks):
        await asyncio.sleep(scheduler.tick_s)
        with counting_round_trips() as counted, counting_bytes() as wire:
            started = time.process_time()
            await scheduler.tick()
            cpu += time.process_time() - started
        trips += counted.sent
        wire_bytes += wire.sent + wire.received
    return PerCall(trips / ticks, wire_bytes / ticks, cpu / ticks * 1e6)


async def store_schedules(
    store: ScheduleStore,
    count: int,
    *,
    channel: str,
    recurrence: Recurrence,
    next_at: Callable[[int], float],
    first: int = 0,
) -> list[Schedule]:
    """``count`` active schedules, the n-th due at ``next_at(n)``, owned by ``OWNERS``
    people in turn."""
    made = []
    for n in range(first, first + count):
        schedule = await store.create(
            team="T1",
            owner=f"U0B{n % OWNERS:03d}",
            channel=channel,
            prompt=f"Any news? ({n})",
            recurrence=recurrence,
            next_at=next_at(n),
            max_per_person=10_000,
            by="U0BENCH",
        )
        assert isinstance(schedule, Schedule), schedule
        made.append(schedule)
    return made


def enqueue_of(state: State) -> Enqueue:
    """The queue's enqueue as the app's scheduler calls it (bot/process/scheduling.py): a
    run's turn joins its thread as a mention's does."""
    threads = state.threads
    return partial(threads.queue.enqueue, join_ttl_s=threads.participation.ttl_s)


def fire_with(state: State, headlines: FakeHeadlines, holder: str, enqueue: Enqueue) -> FireOne:
    return firing_with(
        state.shared.schedules,
        headlines,
        FakeOwners(),
        enqueue,
        holder=holder,
        config=SchedulesConfig(),
    )


async def idle_ticks(state: State, sizes: Sizes) -> tuple[dict[int, PerCall], PerCall]:
    """Idle ticks with each count of schedules stored, none due (all a month ahead); then
    ticks a tick apart at the largest count."""
    store = state.shared.schedules
    now = time.time()
    fire_one = fire_with(state, FakeHeadlines(), "replica-1", enqueue_of(state))
    scheduler = Scheduler(store, fire_one)
    idle: dict[int, PerCall] = {}
    stored = 0
    for count in sizes.stored:
        await store_schedules(
            store,
            count - stored,
            channel="C0IDLE",
            recurrence=HOURLY,
            next_at=lambda n: now + 30 * DAY + n,
            first=stored,
        )
        stored = count
        for _ in range(WARM_UP):
            assert await scheduler.tick() == []
        idle[count] = await per_call([scheduler.tick] * sizes.ticks)
    spaced = await spaced_ticks(scheduler, sizes.spaced)
    return idle, spaced


async def fired_runs(state: State, runs: int) -> tuple[PerCall, PerCall]:
    """``runs`` schedules each fired once at their occurrence (an hour mark 60 days ahead,
    the clock passed in half a second after it), then each run's outcome kept."""
    store = state.shared.schedules
    occurrence = (math.floor(time.time() / 3600) + 60 * 24) * 3600.0
    schedules = await store_schedules(
        store,
        WARM_UP + runs,
        channel="C0FIRED",
        recurrence=HOURLY,
        next_at=lambda _: occurrence,
    )
    fire_one = fire_with(state, FakeHeadlines(), "replica-1", enqueue_of(state))

    await stand_at(store, occurrence + 0.5)  # the store's clock, 60 days on

    def fire(schedule: Schedule) -> Callable[[], Awaitable[object]]:
        async def call() -> None:
            outcome = await fire_one(schedule.id, occurrence, occurrence + 0.5)
            assert isinstance(outcome, Fired), outcome

        return call

    def kept(schedule: Schedule) -> Callable[[], Awaitable[object]]:
        return partial(store.record_outcome, schedule.id, occurrence, "answered")

    warm, measured = schedules[:WARM_UP], schedules[WARM_UP:]
    for schedule in warm:
        await fire(schedule)()
        await kept(schedule)()
    fired = await per_call([fire(s) for s in measured])
    outcome = await per_call([kept(s) for s in measured])
    store.clock_offset_s = 0.0
    return fired, outcome


@dataclass
class Queued:
    """The enqueue the schedulers share, timed: when each run's turn was queued."""

    enqueue: Enqueue
    expected: int
    at: list[float]
    done: asyncio.Event

    async def __call__(self, turn: Turn) -> str | None:
        entry_id = await self.enqueue(turn)
        if entry_id is not None:
            self.at.append(time.time())
            if len(self.at) >= self.expected:
                self.done.set()
        return entry_id


def recorded(fire_one: FireOne, outcomes: list[FireOutcome]) -> FireOne:
    async def fire(schedule_id: str, occurrence: float, now: float) -> FireOutcome:
        outcome = await fire_one(schedule_id, occurrence, now)
        outcomes.append(outcome)
        return outcome

    return fire


async def burst(
    replicas: tuple[State, State],
    count: int,
    *,
    label: str,
    channel: str,
    offset_s: float,
    lead_s: float,
) -> Burst:
    """``count`` schedules due at one moment, fired by a scheduler on each of ``replicas``,
    the second started ``offset_s`` after the first; the moment is ``lead_s`` ahead."""
    first = replicas[0]
    moment = math.ceil(time.time() + lead_s)
    await store_schedules(
        first.shared.schedules, count, channel=channel, recurrence=YEARLY, next_at=lambda _: moment
    )
    if time.time() >= moment - 0.5:
        raise RuntimeError("making the burst's schedules took longer than its lead")
    for state in replicas:  # the connections a tick's firings take, open as after a burst
        await asyncio.gather(*(state.client.ping() for _ in range(DUE_PER_TICK + 4)))
    headlines = FakeHeadlines()  # one Slack for both
    outcomes: list[FireOutcome] = []
    done = asyncio.Event()
    at: list[float] = []
    stop = asyncio.Event()
    with counting_round_trips() as trips:
        tasks = []
        for n, state in enumerate(replicas):
            queued = Queued(enqueue_of(state), count, at, done)
            fire_one = recorded(fire_with(state, headlines, f"replica-{n + 1}", queued), outcomes)
            scheduler = Scheduler(state.shared.schedules, fire_one)
            if n:
                await asyncio.sleep(offset_s)
            tasks.append(asyncio.create_task(scheduler.run(stop)))
        await asyncio.sleep(max(moment - time.time(), 0.0))
        trips_at, cpu_at = trips.sent, time.process_time()
        await asyncio.wait_for(done.wait(), 120)
        stop.set()
        await asyncio.gather(*tasks)
        cpu = time.process_time() - cpu_at
        sent = trips.sent - trips_at
    runs = await runs_queued(first, channel)
    after = sorted(t - moment for t in at)
    return Burst(
        label=label,
        schedules=count,
        all_queued_s=after[-1],
        median_s=statistics.median(after),
        queued=len(runs),
        extra=sum(runs.values()) - len(runs),
        fired=sum(isinstance(o, Fired) for o in outcomes),
        not_mine=sum(isinstance(o, NotMine) for o in outcomes),
        round_trips=sent / count,
        cpu_ms=cpu / count * 1e3,
    )


async def runs_queued(state: State, channel: str) -> Counter[str]:
    """The runs whose turns are in the queue for ``channel``: entries by the run's event id."""
    queue = state.threads.queue
    runs: Counter[str] = Counter()
    for shard in queue.shards.all():
        for _, fields in await state.client.xrange(queue.keys.turns(shard)):
            turn = Turn.from_json(fields["turn"])
            if turn.channel == channel:
                runs[turn.event_id] += 1
    return runs


async def measure(url: str, prefix: str, sizes: Sizes) -> Figures:
    """Every figure, under ``prefix`` on ``url`` (its keys removed afterwards)."""
    config = AppConfig.model_validate({"redis": {"key_prefix": prefix}})
    replicas = (open_state(url, config), open_state(url, config))
    state = replicas[0]
    try:
        idle, spaced = await idle_ticks(state, sizes)
        fired, outcome = await fired_runs(state, sizes.runs)
        bursts = [
            await burst(
                replicas,
                sizes.burst,
                label=label,
                channel=f"C0BURST{n}",
                offset_s=offset,
                lead_s=sizes.lead_s,
            )
            for n, (label, offset) in enumerate((("same phase", 0.0), ("half a tick apart", 0.5)))
        ]
    finally:
        for replica in replicas:
            await replica.aclose()
        await delete_prefix(url, prefix)
    return Figures(sizes, idle, spaced, fired, outcome, bursts)


def table(figures: Figures) -> list[str]:
    """The figures as printed lines."""
    sizes = figures.sizes
    lines = [f"{'what':<48} {'round trips':>12} {'bytes':>8} {'CPU µs':>8}"]

    def row(what: str, cost: PerCall) -> None:
        lines.append(
            f"{what:<48} {cost.round_trips:>12.2f} {cost.wire_bytes:>8.0f} {cost.cpu_us:>8.1f}"
        )

    for count, cost in figures.idle.items():
        row(f"idle tick, {count} schedules ({sizes.ticks} ticks)", cost)
    largest = max(figures.idle, default=0)
    row(f"idle tick, {largest} schedules, 1 s apart ({sizes.spaced})", figures.spaced)
    row(f"fired run ({sizes.runs} runs)", figures.fired)
    row("its outcome kept when the turn ends", figures.outcome)
    lines += [
        "",
        "a burst fired by two schedulers (s after the moment due; per run from then)",
        f"{'schedulers':<18} {'runs':>5} {'all queued':>10} {'median':>7} {'queued':>7}"
        f" {'extra':>6} {'Fired':>6} {'NotMine':>8} {'trips/run':>9} {'CPU ms/run':>10}",
    ]
    for b in figures.bursts:
        lines.append(
            f"{b.label:<18} {b.schedules:>5} {b.all_queued_s:>10.2f} {b.median_s:>7.2f}"
            f" {b.queued:>7} {b.extra:>6} {b.fired:>6} {b.not_mine:>8}"
            f" {b.round_trips:>9.2f} {b.cpu_ms:>10.2f}"
        )
    return lines


async def main(sizes: Sizes) -> None:
    figures = await measure(REDIS_URL, f"bench:{uuid.uuid4().hex[:8]}:", sizes)
    print(f"The scheduler on Redis ({REDIS_URL.split('@')[-1]})")
    print("\n".join(table(figures)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ticks", type=int, default=Sizes.ticks)
    parser.add_argument("--runs", type=int, default=Sizes.runs)
    parser.add_argument("--burst", type=int, default=Sizes.burst)
    args = parser.parse_args()
    asyncio.run(main(Sizes(ticks=args.ticks, runs=args.runs, burst=args.burst)))
