"""Budget days: a day starts at midnight in ``budgets.timezone`` (UTC unless set), and the
clock that says which day it is can be replaced (tests move it to the next day)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

Clock = Callable[[], datetime]  # now, timezone-aware
KEEP_DAYS = 2  # a day's counters stay this long after the day ends, then expire


def system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class BudgetDay:
    day: date  # the date where the budget's time zone is
    resets: datetime  # the next midnight there (timezone-aware)

    @property
    def stamp(self) -> str:
        return self.day.isoformat()

    @property
    def expire_at(self) -> int:
        """When the day's counters go (epoch seconds): a couple of days after it ends."""
        return int((self.resets + timedelta(days=KEEP_DAYS)).timestamp())

    def resets_in(self, now: datetime) -> str:
        """How long until the reset, in hours and minutes: "3 h 20 min", "5 min"."""
        minutes = max(int((self.resets - now).total_seconds() + 59) // 60, 1)
        hours, minutes = divmod(minutes, 60)
        return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def budget_day(now: datetime, zone: tzinfo) -> BudgetDay:
    """The budget day ``now`` falls in, where ``zone`` is."""
    local = now.astimezone(zone)
    midnight = datetime.combine(local.date() + timedelta(days=1), time(0), tzinfo=zone)
    return BudgetDay(local.date(), midnight)
