"""What a due schedule runs (pure): of the occurrences from its next run to now, the latest
runs once if it is at most ``schedules.catch_up_s`` late and the others are counted as
missed; never a burst of catch-up runs. Times are epoch seconds; the recurrence
(bot/schedules/recurrence.py) says when the occurrences are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.schedules.recurrence import Recurrence


@dataclass(frozen=True)
class CatchUp:
    """What to run of the occurrences due: ``run`` (None: none) and how many occurrences
    due are not run (before it, or all of them)."""

    run: float | None
    skipped: int


def catch_up(recurrence: Recurrence, occurrence: float, now: float, catch_up_s: float) -> CatchUp:
    """From the schedule's next run ``occurrence`` to ``now``: the latest occurrence L runs
    once if ``now - L <= catch_up_s``, the earlier ones counted as skipped; else none runs
    and all are counted. Nothing is due before ``occurrence``: ``CatchUp(None, 0)``."""
    if occurrence > now:
        return CatchUp(None, 0)
    latest, count = recurrence.latest_at_or_before(_moment(now), _just_before(occurrence))
    if latest is None:  # the record's run is none of the recurrence's: it alone is due
        latest, count = _moment(occurrence), 1
    run = latest.timestamp()
    if now - run <= catch_up_s:
        return CatchUp(run, count - 1)
    return CatchUp(None, count)


def passed_between(recurrence: Recurrence, after: float, upto: float) -> int:
    """How many occurrences fall in (``after``, ``upto``]."""
    if upto <= after:
        return 0
    return recurrence.latest_at_or_before(_moment(upto), _moment(after))[1]


def next_after(recurrence: Recurrence, moment: float) -> float | None:
    """The first occurrence strictly after ``moment``; None: there is none (a one-off)."""
    following = recurrence.next_after(_moment(moment))
    return None if following is None else following.timestamp()


def _moment(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _just_before(epoch: float) -> datetime:
    return _moment(epoch) - timedelta(microseconds=1)
