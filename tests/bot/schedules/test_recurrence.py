"""A schedule's recurrence on fixed clocks: daylight saving in Europe/Berlin (2026: clocks go
forward on 29 March at 02:00, back on 25 October at 03:00), month ends, weekday names, a
missed window, one-offs, the minimum interval, words and JSON. Pure: no Redis, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from bot.schedules.recurrence import (
    COUNT_LIMIT,
    Recurrence,
    ScheduleInputError,
    parse_recurrence,
)

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday


def cron(
    expression: str, *, zone: str = "Europe/Berlin", now: datetime = NOW, min_s: int = 60
) -> Recurrence:
    return parse_recurrence(cron=expression, at=None, timezone=zone, now=now, min_interval_s=min_s)


def one_off(at: str, *, zone: str = "Europe/Berlin", now: datetime = NOW) -> Recurrence:
    return parse_recurrence(cron=None, at=at, timezone=zone, now=now, min_interval_s=3600)


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def refusal(
    *,
    cron: str | None = None,
    at: str | None = None,
    timezone: str = "Europe/Berlin",
    min_interval_s: int = 3600,
) -> str:
    """The sentence parse_recurrence refuses this input with, at NOW."""
    with pytest.raises(ScheduleInputError) as raised:
        parse_recurrence(
            cron=cron, at=at, timezone=timezone, now=NOW, min_interval_s=min_interval_s
        )
    return str(raised.value)


# Daylight saving


def test_nine_in_berlin_runs_at_nine_local_on_both_sides_of_the_spring_change() -> None:
    recurrence = cron("0 9 * * *", now=utc(2026, 3, 27, 12, 0))
    runs = recurrence.upcoming(utc(2026, 3, 27, 12, 0), n=3)
    assert runs == [utc(2026, 3, 28, 8, 0), utc(2026, 3, 29, 7, 0), utc(2026, 3, 30, 7, 0)]
    assert {run.astimezone(BERLIN).hour for run in runs} == {9}


def test_nine_in_berlin_runs_at_nine_local_on_both_sides_of_the_autumn_change() -> None:
    recurrence = cron("0 9 * * *", now=utc(2026, 10, 23, 12, 0))
    runs = recurrence.upcoming(utc(2026, 10, 23, 12, 0), n=3)
    assert runs == [utc(2026, 10, 24, 7, 0), utc(2026, 10, 25, 8, 0), utc(2026, 10, 26, 8, 0)]
    assert {run.astimezone(BERLIN).hour for run in runs} == {9}


def test_a_time_in_the_skipped_hour_runs_once_right_after_the_jump() -> None:
    recurrence = cron("30 2 * * *", now=utc(2026, 3, 28, 12, 0))
    assert recurrence.upcoming(utc(2026, 3, 28, 12, 0), n=3) == [
        utc(2026, 3, 29, 1, 0),  # 03:00 CEST: 02:30 did not exist that night
        utc(2026, 3, 30, 0, 30),
        utc(2026, 3, 31, 0, 30),
    ]
    berlin_day = (utc(2026, 3, 28, 23, 0), utc(2026, 3, 29, 22, 0))  # 29 March, 23 hours
    assert recurrence.latest_at_or_before(berlin_day[1], since=berlin_day[0]) == (
        utc(2026, 3, 29, 1, 0),
        1,
    )


def test_a_time_in_the_repeated_hour_runs_once() -> None:
    recurrence = cron("30 2 * * *", now=utc(2026, 10, 24, 12, 0))
    assert recurrence.upcoming(utc(2026, 10, 24, 12, 0), n=3) == [
        utc(2026, 10, 25, 0, 30),  # the first 02:30 (CEST), not the second (CET)
        utc(2026, 10, 26, 1, 30),
        utc(2026, 10, 27, 1, 30),
    ]
    berlin_day = (utc(2026, 10, 24, 22, 0), utc(2026, 10, 25, 23, 0))  # 25 October, 25 hours
    assert recurrence.latest_at_or_before(berlin_day[1], since=berlin_day[0]) == (
        utc(2026, 10, 25, 0, 30),
        1,
    )
    # Asked during the second pass of the hour (02:10 CET), before that pass's 02:30: the
    # day's run was the first pass's, so the next one is tomorrow's.
    assert recurrence.next_after(utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 26, 1, 30)


def test_a_wildcard_hour_follows_real_time_through_both_changes() -> None:
    recurrence = cron("*/30 * * * *", now=utc(2026, 3, 28, 12, 0), min_s=1800)
    # Spring: 01:30 CET, then 03:00 CEST: one real half hour apart.
    assert recurrence.upcoming(utc(2026, 3, 29, 0, 15), n=2) == [
        utc(2026, 3, 29, 0, 30),
        utc(2026, 3, 29, 1, 0),
    ]
    # Autumn: 02:00 to 03:00 local happens twice, and each real half hour runs once.
    latest, count = recurrence.latest_at_or_before(
        utc(2026, 10, 25, 2, 0), since=utc(2026, 10, 24, 22, 0)
    )
    assert (latest, count) == (utc(2026, 10, 25, 2, 0), 8)


# Month ends, weekday names


def test_the_31st_skips_the_months_without_one() -> None:
    runs = cron("0 9 31 * *", zone="UTC").upcoming(utc(2026, 1, 1), n=5)
    assert runs == [
        utc(2026, 1, 31, 9, 0),
        utc(2026, 3, 31, 9, 0),
        utc(2026, 5, 31, 9, 0),
        utc(2026, 7, 31, 9, 0),
        utc(2026, 8, 31, 9, 0),
    ]


def test_l_is_the_last_day_of_every_month_leap_february_included() -> None:
    recurrence = cron("0 9 L * *", zone="UTC")
    assert [run.date().isoformat() for run in recurrence.upcoming(utc(2028, 1, 1), n=4)] == [
        "2028-01-31",
        "2028-02-29",
        "2028-03-31",
        "2028-04-30",
    ]


def test_a_day_no_named_month_has_never_runs() -> None:
    message = refusal(cron="0 9 30 2 *")
    assert "'0 9 30 2 *' never runs" in message and "'L'" in message


def test_an_expression_that_matches_nothing_in_fifty_years_never_runs() -> None:
    # The last weekday of the month that is also a Saturday or a Sunday.
    assert "'0 9 LW * */6' never runs" in refusal(cron="0 9 LW * */6")


def test_weekday_names_read_as_numbers() -> None:
    friday = utc(2026, 12, 4, 12, 0)
    named = cron("0 9 * * MON-FRI").upcoming(friday, n=3)
    assert named == cron("0 9 * * 1-5").upcoming(friday, n=3)
    assert [run.astimezone(BERLIN).strftime("%a %d %H:%M") for run in named] == [
        "Mon 07 09:00",
        "Tue 08 09:00",
        "Wed 09 09:00",
    ]
    weekend = cron("15 10 * * sat,SUN").upcoming(friday, n=3)
    assert [run.astimezone(BERLIN).strftime("%a %H:%M") for run in weekend] == [
        "Sat 10:15",
        "Sun 10:15",
        "Sat 10:15",
    ]
    assert cron("0 9 * * 7").upcoming(friday, n=1) == cron("0 9 * * SUN").upcoming(friday, n=1)


# A missed window


def test_a_missed_window_gives_its_latest_run_and_how_many_it_held() -> None:
    hourly = cron("0 * * * *", zone="UTC", min_s=3600)
    # The last run handled was 10:00; nothing ran until 13:20: 11:00, 12:00 and 13:00.
    assert hourly.latest_at_or_before(utc(2026, 12, 1, 13, 20), since=utc(2026, 12, 1, 10, 0)) == (
        utc(2026, 12, 1, 13, 0),
        3,
    )
    # The window is open at `since` and closed at `moment`.
    assert hourly.latest_at_or_before(utc(2026, 12, 1, 13, 0), since=utc(2026, 12, 1, 12, 0)) == (
        utc(2026, 12, 1, 13, 0),
        1,
    )
    assert hourly.latest_at_or_before(utc(2026, 12, 1, 13, 59), since=utc(2026, 12, 1, 13, 0)) == (
        None,
        0,
    )


def test_a_long_missed_window_stops_counting_but_still_finds_the_latest() -> None:
    every_minute = cron("* * * * *", zone="UTC")
    since, moment = utc(2026, 1, 1), utc(2026, 1, 10, 0, 0, 30)  # 12,960 runs
    assert every_minute.latest_at_or_before(moment, since=since) == (
        utc(2026, 1, 10, 0, 0),
        COUNT_LIMIT,
    )


def test_a_one_off_in_the_window_is_its_latest_run() -> None:
    recurrence = one_off("2026-12-04T09:00")
    at = utc(2026, 12, 4, 8, 0)
    assert recurrence.latest_at_or_before(at + timedelta(minutes=5), since=NOW) == (at, 1)
    assert recurrence.latest_at_or_before(at - timedelta(seconds=1), since=NOW) == (None, 0)
    assert recurrence.latest_at_or_before(at + timedelta(days=1), since=at) == (None, 0)


# One-offs


def test_a_naive_time_is_in_the_schedules_zone_and_an_offset_is_kept() -> None:
    naive = one_off("2026-12-04T09:00")
    assert naive.next_after(NOW) == utc(2026, 12, 4, 8, 0)
    assert naive.upcoming(NOW) == [utc(2026, 12, 4, 8, 0)]
    offset = one_off("2026-12-04T09:00-05:00")
    assert offset.at is not None and offset.at.utcoffset() == timedelta(hours=-5)
    assert offset.next_after(NOW) == utc(2026, 12, 4, 14, 0)
    assert one_off("2026-12-04T09:00Z").next_after(NOW) == utc(2026, 12, 4, 9, 0)


def test_a_one_off_already_past_has_no_next_run() -> None:
    recurrence = one_off("2026-12-04T09:00")
    assert recurrence.next_after(utc(2026, 12, 4, 8, 0)) is None
    assert recurrence.upcoming(utc(2026, 12, 5), n=3) == []


def test_a_naive_time_in_a_changing_hour_follows_crons_rules() -> None:
    spring_night = utc(2026, 3, 28, 12, 0)
    assert one_off("2026-03-29T02:30", now=spring_night).at == datetime(
        2026, 3, 29, 3, 0, tzinfo=BERLIN
    )
    autumn_night = utc(2026, 10, 24, 12, 0)
    assert one_off("2026-10-25T02:30", now=autumn_night).next_after(autumn_night) == utc(
        2026, 10, 25, 0, 30
    )


def test_a_one_off_in_the_past_is_refused_with_the_time_now() -> None:
    message = refusal(at="2026-11-30T12:59")  # 11:59 UTC
    assert "'2026-11-30T12:59' is in the past" in message
    assert "it is now 2026-11-30 13:00 in Europe/Berlin" in message


def test_a_one_off_must_be_the_lead_time_ahead() -> None:
    message = refusal(at="2026-11-30T12:00:05+00:00")
    assert "only 5 seconds ahead" in message and "at least 10 seconds ahead" in message
    assert one_off("2026-11-30T12:00:10+00:00").next_after(NOW) == NOW + timedelta(seconds=10)


def test_a_one_off_needs_a_date_and_a_time() -> None:
    assert "'2026-12-04' is a date without a time of day" in refusal(at="2026-12-04")
    assert "'next friday' is not an ISO 8601 date and time" in refusal(at="next friday")
    assert "'09:00' is not an ISO 8601 date and time" in refusal(at="09:00")


# What a schedule's input must be


def test_the_minimum_interval_refuses_and_accepts() -> None:
    message = refusal(cron="*/30 * * * *", min_interval_s=3600)
    assert "'*/30 * * * *' runs 30 minutes apart at its closest" in message
    assert "at least 60 minutes apart (schedules.min_interval_s)" in message
    assert cron("*/30 * * * *", min_s=60).cron == "*/30 * * * *"
    # */7 runs at :56 and then :00: four minutes apart.
    assert "runs 4 minutes apart" in refusal(cron="*/7 * * * *", min_interval_s=300)


def test_the_minimum_interval_looks_years_ahead_for_a_rare_day() -> None:
    # Every minute of 29 February: the next one is in 2028, over a year from NOW.
    message = refusal(cron="* * 29 2 *", min_interval_s=3600)
    assert "'* * 29 2 *' runs 1 minute apart at its closest" in message
    leap_days = cron("0 9 29 2 *", min_s=3600)  # once each leap year: four years apart
    assert leap_days.upcoming(NOW, n=2) == [utc(2028, 2, 29, 8, 0), utc(2032, 2, 29, 8, 0)]


def test_the_minimum_interval_is_the_expressions_own_not_a_clock_change() -> None:
    # On the spring day, cron's rule runs 02:15 at 03:00, then 03:15 comes: 15 minutes.
    spring = utc(2026, 3, 28, 12, 0)
    recurrence = cron("15 2,3 * * *", now=spring, min_s=3600)
    assert recurrence.upcoming(spring, n=2) == [utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 15)]


def test_exactly_one_of_cron_and_at() -> None:
    assert "not both" in refusal(cron="0 9 * * *", at="2026-12-04T09:00")
    assert "Give `cron`" in refusal()
    assert "Give `cron`" in refusal(cron="  ", at="")
    blank_cron = parse_recurrence(
        cron="", at="2026-12-04T09:00", timezone="UTC", now=NOW, min_interval_s=3600
    )
    assert blank_cron == Recurrence(cron=None, at=utc(2026, 12, 4, 9, 0), timezone="UTC")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("0 0 9 * * *", "'0 0 9 * * *' has 6 fields"),
        ("0 9 * *", "'0 9 * *' has 4 fields"),
        ("@daily", "Write '@daily' as its five fields, '0 0 * * *'"),
        ("@hourly", "'0 * * * *'"),
        ("@reboot", "'@reboot' is not a time a schedule can run at"),
        ("61 9 * * *", "'61 9 * * *' is not a cron expression this bot can read (bad minute)"),
        ("0 9 * * FUNDAY", "(bad day-of-week)"),
    ],
)
def test_a_cron_expression_that_is_not_standard_five_fields(expression: str, expected: str) -> None:
    message = refusal(cron=expression)
    assert expected in message
    assert "minute hour day-of-month month day-of-week" in message


def test_the_fields_are_kept_with_one_space_between() -> None:
    assert cron("  0   9 * *\t1-5 ").cron == "0 9 * * 1-5"


@pytest.mark.parametrize("zone", ["Mars/Base", "Europe", "europe/berlin", "", "../etc/passwd"])
def test_an_unknown_time_zone_is_named(zone: str) -> None:
    message = refusal(cron="0 9 * * *", timezone=zone)
    assert message.startswith(f"'{zone}' is not a time zone the IANA database knows")


def test_naive_moments_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="naive"):
        cron("0 9 * * *").next_after(datetime(2026, 12, 1, 9, 0))
    with pytest.raises(ValueError, match="not both"):
        Recurrence(cron=None, at=None, timezone="UTC")


# Words and JSON


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 9 * * 1-5", "at 09:00, Monday through Friday (Europe/Berlin)"),
        ("30 2 * * *", "at 02:30, every day (Europe/Berlin)"),
        ("0 9,17 * * *", "at 09:00 and 17:00, every day (Europe/Berlin)"),
        ("*/30 * * * *", "every 30 minutes (Europe/Berlin)"),
        ("0 * * * *", "every hour (Europe/Berlin)"),
        ("0 9 31 * *", "at 09:00, on day 31 of the month (Europe/Berlin)"),
        ("0 9 L * *", "at 09:00, on the last day of the month (Europe/Berlin)"),
        ("0 9 * * MON#1", "at 09:00, on the first Monday of the month (Europe/Berlin)"),
        ("15 10 * * SAT,SUN", "at 10:15, only on Saturday and Sunday (Europe/Berlin)"),
    ],
)
def test_a_cron_expression_in_words(expression: str, words: str) -> None:
    assert cron(expression, min_s=60).words() == words


def test_a_one_off_in_words_is_in_the_schedules_zone() -> None:
    assert one_off("2026-12-04T09:00").words() == "once, on 2026-12-04 at 09:00 (Europe/Berlin)"
    assert one_off("2026-12-04T09:00+00:00").words() == (
        "once, on 2026-12-04 at 10:00 (Europe/Berlin)"
    )


@pytest.mark.parametrize(
    "recurrence",
    [
        Recurrence(cron="0 9 * * 1-5", at=None, timezone="Europe/Berlin"),
        Recurrence(cron=None, at=datetime(2026, 12, 4, 9, 0, tzinfo=UTC), timezone="UTC"),
        Recurrence(
            cron=None,
            at=datetime(2026, 12, 4, 9, 0, tzinfo=timezone(timedelta(hours=-5))),
            timezone="America/New_York",
        ),
    ],
)
def test_json_round_trip(recurrence: Recurrence) -> None:
    again = Recurrence.from_json(recurrence.to_json())
    assert again == recurrence
    if recurrence.at is not None:  # the offset it was given, not only the instant
        assert again.at is not None and again.at.utcoffset() == recurrence.at.utcoffset()
