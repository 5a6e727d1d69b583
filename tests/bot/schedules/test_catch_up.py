"""What a due schedule runs, on fixed clocks: on time, the run itself; missed, the latest
once if it is at most catch_up_s late and the others counted; older, none and all counted;
one-offs; across a daylight-saving change (the latest is 09:00 local on its side)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.schedules.catch_up import CatchUp, catch_up, next_after, passed_between
from bot.schedules.recurrence import Recurrence

HOURLY = Recurrence(cron="0 * * * *", at=None, timezone="UTC")
NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


def test_on_time_runs_the_occurrence_itself() -> None:
    assert catch_up(HOURLY, NINE, NINE, 3600) == CatchUp(NINE, 0)
    assert catch_up(HOURLY, NINE, NINE + 59 * 60, 3600) == CatchUp(NINE, 0)


def test_missed_runs_the_latest_once_and_counts_the_rest() -> None:
    assert catch_up(HOURLY, NINE, NINE + 2 * HOUR + 600, 3600) == CatchUp(NINE + 2 * HOUR, 2)
    # Exactly catch_up_s late still runs; a second more does not.
    assert catch_up(HOURLY, NINE, NINE + 2 * HOUR + 600, 600) == CatchUp(NINE + 2 * HOUR, 2)
    assert catch_up(HOURLY, NINE, NINE + 2 * HOUR + 601, 600) == CatchUp(None, 3)


def test_with_no_catch_up_only_a_run_on_the_second_runs() -> None:
    assert catch_up(HOURLY, NINE, NINE, 0) == CatchUp(NINE, 0)
    assert catch_up(HOURLY, NINE, NINE + 1, 0) == CatchUp(None, 1)


def test_a_day_down_is_one_run_at_most() -> None:
    now = NINE + 24 * HOUR + 30
    assert catch_up(HOURLY, NINE, now, 3600) == CatchUp(NINE + 24 * HOUR, 24)


def test_nothing_is_due_before_the_occurrence() -> None:
    assert catch_up(HOURLY, NINE, NINE - 1, 3600) == CatchUp(None, 0)


def test_a_one_off() -> None:
    once = Recurrence(cron=None, at=datetime.fromtimestamp(NINE, UTC), timezone="UTC")
    assert catch_up(once, NINE, NINE + 10, 3600) == CatchUp(NINE, 0)
    assert catch_up(once, NINE, NINE + 2 * HOUR, 3600) == CatchUp(None, 1)
    assert next_after(once, NINE) is None
    assert next_after(once, NINE - 1) == NINE


def test_an_occurrence_the_recurrence_does_not_hold_counts_alone() -> None:
    """A next run that is none of the recurrence's (a record another version wrote): it is
    the only one due, and runs if it is not too late."""
    odd = NINE + 17
    assert catch_up(HOURLY, odd, odd + 5, 3600) == CatchUp(odd, 0)
    assert catch_up(HOURLY, odd, odd + 20, 10) == CatchUp(None, 1)


def test_across_a_daylight_saving_change_the_latest_is_nine_local() -> None:
    berlin = Recurrence(cron="0 9 * * *", at=None, timezone="Europe/Berlin")
    friday = datetime(2026, 3, 27, 8, 0, tzinfo=UTC).timestamp()  # 09:00 CET
    monday = datetime(2026, 3, 30, 7, 0, tzinfo=UTC).timestamp()  # 09:00 CEST
    assert catch_up(berlin, friday, monday + 600, 3600) == CatchUp(monday, 3)
    assert next_after(berlin, monday) == datetime(2026, 3, 31, 7, 0, tzinfo=UTC).timestamp()


def test_passed_between_counts_the_window_open_at_its_start() -> None:
    assert passed_between(HOURLY, NINE, NINE) == 0
    assert passed_between(HOURLY, NINE, NINE + HOUR) == 1
    assert passed_between(HOURLY, NINE - 1, NINE + HOUR + 5) == 2
