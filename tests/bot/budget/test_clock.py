"""Budget days: midnight where the budget's time zone is, and when a day resets. Pure."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from bot.budget.clock import budget_day
from bot.budget.wording import reset

BERLIN = ZoneInfo("Europe/Berlin")
UTC_ZONE = ZoneInfo("UTC")


def test_utc_days_start_at_midnight_utc() -> None:
    day = budget_day(datetime(2026, 3, 2, 23, 59, 59, tzinfo=UTC), UTC_ZONE)
    assert day.day == date(2026, 3, 2)
    assert day.resets == datetime(2026, 3, 3, tzinfo=UTC)
    assert budget_day(datetime(2026, 3, 3, 0, 0, tzinfo=UTC), UTC_ZONE).day == date(2026, 3, 3)


def test_a_timezone_moves_the_boundary() -> None:
    # 23:30 UTC is already the next day in Berlin (UTC+1 in winter).
    day = budget_day(datetime(2026, 3, 2, 23, 30, tzinfo=UTC), BERLIN)
    assert day.day == date(2026, 3, 3)
    assert day.resets == datetime(2026, 3, 3, 23, 0, tzinfo=UTC)  # midnight in Berlin
    # 22:59 UTC is still the 2nd there.
    assert budget_day(datetime(2026, 3, 2, 22, 59, tzinfo=UTC), BERLIN).day == date(2026, 3, 2)


def test_a_daylight_saving_day_is_23_hours_long() -> None:
    # Berlin moves its clocks forward on 2026-03-29: that day lasts 23 hours.
    start = budget_day(datetime(2026, 3, 28, 23, 0, tzinfo=UTC), BERLIN)
    assert start.day == date(2026, 3, 29)
    assert start.resets == datetime(2026, 3, 29, 22, 0, tzinfo=UTC)  # UTC+2 from then on


def test_counters_expire_two_days_after_their_day() -> None:
    day = budget_day(datetime(2026, 3, 2, 12, 0, tzinfo=UTC), UTC_ZONE)
    assert day.expire_at == int(datetime(2026, 3, 5, tzinfo=UTC).timestamp())


def test_the_reset_as_a_person_reads_it() -> None:
    now = datetime(2026, 3, 2, 20, 40, tzinfo=UTC)
    assert reset(budget_day(now, BERLIN), now) == "00:00 Europe/Berlin on 2026-03-03, in 2 h 20 min"
    late = datetime(2026, 3, 2, 23, 59, 30, tzinfo=UTC)
    assert reset(budget_day(late, UTC_ZONE), late) == "00:00 UTC on 2026-03-03, in 1 min"
