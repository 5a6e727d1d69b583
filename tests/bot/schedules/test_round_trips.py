"""The Redis round trips the issue asks for, counted where redis-py sends: an idle tick of the
scheduler is one (the due index and the active count in one pipeline); a fired run is four
(claim, headline recorded, the turn queued, advance), its scripts already loaded."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.process.state import State
from bot.schedules.config import SchedulesConfig
from bot.schedules.firing import Fired, firing_with
from bot.schedules.recurrence import Recurrence
from bot.schedules.scheduler import Scheduler
from bot.state.schedules import Schedule
from tests.bot.schedules.firing_kit import FakeHeadlines, FakeOwners, stand_at
from tests.fakes.round_trips import counting_round_trips

HOURLY = Recurrence(cron="0 * * * *", at=None, timezone="UTC")
NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


async def test_an_idle_tick_is_one_round_trip_and_a_fired_run_four(state: State) -> None:
    store = state.shared.schedules
    made = await store.create(
        team="T1",
        owner="U1",
        channel="C0OPS",
        prompt="Any news?",
        recurrence=HOURLY,
        next_at=NINE,
        max_per_person=10,
        by="U1",
    )
    assert isinstance(made, Schedule)
    fire_one = firing_with(
        store,
        FakeHeadlines(),
        FakeOwners(),
        state.threads.queue.enqueue,
        holder="replica-1",
        config=SchedulesConfig(),
    )
    await stand_at(store, NINE + 1)
    assert isinstance(await fire_one("s1", NINE, NINE + 1), Fired)  # loads the scripts

    await stand_at(store, NINE + 2)
    scheduler = Scheduler(store, fire_one)
    assert await scheduler.tick() == []  # loads the look's script
    with counting_round_trips() as idle:
        assert await scheduler.tick() == []
    assert idle.sent == 1

    await stand_at(store, NINE + HOUR + 0.5)
    with counting_round_trips() as run:
        assert isinstance(await fire_one("s1", NINE + HOUR, NINE + HOUR + 0.5), Fired)
    assert run.sent == 4
