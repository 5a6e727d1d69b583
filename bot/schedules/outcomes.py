"""A scheduled run's outcome, kept on its schedule once the run's turn ended: answered, failed
or cancelled (how the turn's loop ended, once it was delivered), or dead_lettered (given up).
The turn knows no schedules; its event id names the run (``schedule:<id>:<occurrence>``,
bot/schedules/firing.py ``scheduled_turn``) and the worker tells this module when a turn
ended (``TurnEnded``, bot/turn/ports.py)."""

from __future__ import annotations

from bot.state.schedules import ScheduleStore
from bot.turn.model import QueuedTurn, Turn, TurnKind
from bot.turn.outcome import Delivered, Delivery
from bot.turn.ports import TurnEnded
from bot.turn.states import TurnState, settled_state

RUN_PREFIX = "schedule:"  # a scheduled run's turn's event id: schedule:<id>:<occurrence>


def run_of(turn: Turn) -> tuple[str, float] | None:
    """The schedule and the occurrence a scheduled run's turn is (pure); None for another
    turn."""
    if turn.kind is not TurnKind.SCHEDULED or not turn.event_id.startswith(RUN_PREFIX):
        return None
    schedule_id, _, occurrence = turn.event_id.removeprefix(RUN_PREFIX).rpartition(":")
    try:
        return (schedule_id, float(occurrence)) if schedule_id else None
    except ValueError:
        return None


def outcome_of(end: Delivery) -> str:
    """How a run ended, as its schedule shows it (pure)."""
    if isinstance(end, Delivered):
        return settled_state(end.reason).value if end.reason is not None else "delivered"
    return TurnState.DEAD_LETTERED.value


def run_outcomes(store: ScheduleStore) -> TurnEnded:
    """What the worker tells when a turn ended: a scheduled run's outcome on its schedule
    (the store keeps it only while the run is the schedule's last)."""

    async def ended(queued: QueuedTurn, end: Delivery) -> None:
        run = run_of(queued.turn)
        if run is not None:
            await store.record_outcome(run[0], run[1], outcome_of(end))

    return ended
