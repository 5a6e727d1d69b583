"""A scheduled run's outcome on its schedule once its turn ended (bot/schedules/outcomes.py):
which run a turn is, from its event id; how the run ended in words; kept only while the run
is the schedule's last. Pure, and on the real store."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.agent.result import StopReason
from bot.process.state import State
from bot.schedules.firing import scheduled_turn
from bot.schedules.outcomes import outcome_of, run_of, run_outcomes
from bot.schedules.recurrence import Recurrence
from bot.state.schedules import Schedule
from bot.turn.model import QueuedTurn, Turn, TurnKind
from bot.turn.outcome import DeadLettered, Delivered
from tests.bot.schedules.firing_kit import stand_at

NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
HOURLY = Recurrence("0 * * * *", None, "UTC")


async def a_schedule(state: State) -> Schedule:
    made = await state.shared.schedules.create(
        team="T1",
        owner="U1",
        channel="C1",
        prompt="Ask.",
        recurrence=HOURLY,
        next_at=NINE,
        max_per_person=10,
        by="U1",
    )
    assert isinstance(made, Schedule)
    return made


def test_a_run_is_named_by_its_turns_event_id() -> None:
    schedule = Schedule(
        "s7", "T1", "U1", "C1", "Ask.", HOURLY, "active", "", 0.0, NINE, None, "", 0
    )
    turn = scheduled_turn(schedule, NINE + 0.25, "1800000001.000100", NINE + 1)
    assert run_of(turn) == ("s7", NINE + 0.25)
    mention = Turn("T1", "C1", "1.0", "U1", "hi", event_id="schedule:s7:1")
    assert run_of(mention) is None  # only a scheduled run's turn
    for broken in ("schedule::1", "schedule:s7:soon", "Ev123"):
        odd = Turn("T1", "C1", "1.0", "U1", "hi", event_id=broken, kind=TurnKind.SCHEDULED)
        assert run_of(odd) is None


def test_how_a_run_ended_in_words() -> None:
    assert outcome_of(Delivered(StopReason.ANSWERED)) == "answered"
    assert outcome_of(Delivered(StopReason.ROUND_LIMIT)) == "answered"
    assert outcome_of(Delivered(StopReason.FAILED)) == "failed"
    assert outcome_of(Delivered(StopReason.CANCELLED)) == "cancelled"
    assert outcome_of(Delivered()) == "delivered"
    assert outcome_of(DeadLettered("Slack refused")) == "not delivered"


async def test_the_outcome_is_kept_while_the_run_is_the_schedules_last(state: State) -> None:
    store = state.shared.schedules
    schedule = await a_schedule(state)
    await stand_at(store, NINE + 1)
    firing = await store.claim(schedule.id, NINE, "w1", 30)
    assert firing is not None
    await store.advance(firing, ran=NINE, next_at=NINE + 3600, missed=0, outcome="queued")
    ended = run_outcomes(store)
    turn = scheduled_turn(schedule, NINE, "1800000001.000100", NINE + 1)
    await ended(QueuedTurn("1-1", turn), Delivered(StopReason.ANSWERED))
    kept = await store.get(schedule.id)
    assert kept is not None and kept.last_outcome == "answered"
    older = scheduled_turn(schedule, NINE - 3600, "1800000000.000100", NINE)
    await ended(QueuedTurn("1-0", older), DeadLettered("late"))  # not the last run: ignored
    kept = await store.get(schedule.id)
    assert kept is not None and kept.last_outcome == "answered"
    plain = Turn("T1", "C1", "2.0", "U1", "hi", message_ts="2.0")
    await ended(QueuedTurn("1-2", plain), DeadLettered("x"))  # not a run: nothing to keep
    kept = await store.get(schedule.id)
    assert kept is not None and kept.last_outcome == "answered"
