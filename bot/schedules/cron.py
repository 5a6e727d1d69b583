"""Standard 5-field cron expressions: read and evaluated by cronsim, put in words by
cron-descriptor. Pure: no clock of its own, no I/O beyond the libraries' own files (the tz
database, cron-descriptor's English catalogue).

Why cronsim and not croniter. Vixie (ISC) cron's rules for daylight-saving changes: a job at
a fixed time that falls in a skipped hour runs once, right after the jump; a job at a fixed
time in a repeated hour runs once; a job with a wildcard minute or hour follows the clock
as it is (every real hour or minute). Both libraries were run over Europe/Berlin's 2026
changes (clocks forward 2026-03-29 02:00, back 2026-10-25 03:00), from the day before:

- ``30 2 * * *`` on the skipped day: both run once, at 03:00 CEST (01:00 UTC).
- ``30 2 * * *`` on the repeated day: cronsim runs once, at the first 02:30 (00:30 UTC);
  croniter 7.0.0 runs twice, at 02:30 CEST and again at 02:30 CET (00:30 and 01:30 UTC).
- ``15,45 2 * * *`` on the repeated day: cronsim 2 runs, croniter 4.
- ``0 9 * * *`` across both changes: both 09:00 local (07:00 UTC in summer, 08:00 in
  winter); ``*/30 * * * *`` and ``0 * * * *``: both follow real time, each real half hour
  or hour once.

So croniter breaks "a job in a repeated hour runs once", and cronsim (written for
healthchecks.io to match Debian's Vixie cron) keeps every rule. cronsim also reads the
extensions ``L`` and ``LW`` (the last day, the last weekday of the month), ``5L`` (the last
Friday) and ``MON#1`` (the first Monday), which are accepted here. It does not read
``@daily`` and its kin, so neither does this module: an alias is refused with its five
fields named. Its own ``explain()`` writes "the 21th day", so cron-descriptor writes the
words.

``occurrences`` takes the expression's times strictly after a moment, each once: around a
repeated hour cronsim works in wall-clock time and may hand back a time at or before the
moment it started from (when that moment was in the second pass of the hour), and a skipped
hour's runs land on the same instant as the first run after the jump (``0 2,3 * * *`` runs
once at 03:00 on the spring day); both are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import islice

from cron_descriptor import ExpressionDescriptor, Options
from cronsim import CronSim, CronSimError

from bot.schedules.errors import ScheduleInputError

FIELDS = "minute hour day-of-month month day-of-week"
EXAMPLE = "'0 9 * * 1-5' (09:00 on weekdays)"
_HOW = f"{FIELDS}, for example {EXAMPLE}."
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
GAP_SAMPLE = 400  # the shortest gap is looked for over this many runs at most...
GAP_SPAN = timedelta(days=8 * 366)  # ...or over 8 years (two leap days), whichever ends first

_ANY_START = datetime(2026, 1, 1, tzinfo=UTC)  # cronsim parses in its constructor
_WORDS = Options(use_24hour_time_format=True, locale_code="en_US")


def checked(expression: str) -> str:
    """``expression`` with its fields separated by one space, if cronsim reads it as a
    5-field expression that names a day some month has; else ``ScheduleInputError``."""
    fields = expression.split()
    if not fields:
        raise ScheduleInputError(f"The cron expression is empty: write five fields, {_HOW}")
    if fields[0].startswith("@"):
        raise ScheduleInputError(_alias_refused(fields[0]))
    text = " ".join(fields)
    if len(fields) != 5:
        raise ScheduleInputError(
            f"'{text}' has {len(fields)} fields, and a schedule's cron expression has exactly "
            f"five (no seconds field): {_HOW}"
        )
    try:
        CronSim(text, _ANY_START)
    except CronSimError as error:
        if _reads_in_any_month(fields):
            raise ScheduleInputError(
                f"'{text}' never runs: no month it names has the day it names (like 30 "
                "February). Name a day every chosen month has, or 'L' for the month's last day."
            ) from None
        raise ScheduleInputError(
            f"'{text}' is not a cron expression this bot can read ({str(error).lower()}): {_HOW}"
        ) from None
    return text


def _alias_refused(alias: str) -> str:
    fields = ALIASES.get(alias.lower())
    if fields is not None:
        return f"Write '{alias}' as its five fields, '{fields}': schedules take {FIELDS}."
    if alias.lower() == "@reboot":
        return f"'@reboot' is not a time a schedule can run at: give five fields, {_HOW}"
    return f"'{alias}' is not a cron expression: give five fields, {_HOW}"


def _reads_in_any_month(fields: list[str]) -> bool:
    """Whether the expression reads once its month field is '*': then the fields are right
    and only the day and the months never meet."""
    try:
        CronSim(" ".join([*fields[:3], "*", fields[4]]), _ANY_START)
    except CronSimError:
        return False
    return True


def occurrences(expression: str, zone: tzinfo, after: datetime) -> Iterator[datetime]:
    """The times ``expression`` runs in ``zone`` strictly after ``after``, in order, each
    once, timezone-aware in UTC; the iterator ends when no time matches in 50 years.
    ``expression`` is one ``checked`` let through."""
    latest = after
    for found in CronSim(expression, after.astimezone(zone)):
        moment = found.astimezone(UTC)
        if moment > latest:
            latest = moment
            yield moment


def shortest_gap(expression: str, start: datetime) -> timedelta | None:
    """The shortest time between two runs in a row after ``start``, over the next
    ``GAP_SAMPLE`` runs or ``GAP_SPAN``, whichever ends first; None for fewer than two runs.
    The span is years long so an expression whose runs all fall on a rare day (every minute
    of 29 February) is measured on that day, not let through for having none this year.

    Measured in UTC, where no clock jumps: the gaps are the expression's own. In a zone with
    daylight saving one day a year may bring two runs closer (``15 2,3 * * *`` runs at
    03:00 and 03:15 on the spring day, by cron's rule for a skipped hour), and that is not a
    reason to refuse it."""
    shortest: timedelta | None = None
    previous: datetime | None = None
    for moment in islice(occurrences(expression, UTC, start), GAP_SAMPLE):
        if moment > start + GAP_SPAN:
            break
        if previous is not None and (shortest is None or moment - previous < shortest):
            shortest = moment - previous
        previous = moment
    return shortest


def in_words(expression: str) -> str:
    """The expression in plain English, starting lower case: "at 09:00, Monday through
    Friday", "every 30 minutes"; a fixed time on every day says so ("at 02:30, every
    day")."""
    text = str(ExpressionDescriptor(expression, _WORDS).get_description())
    _, hour, *days = expression.split()
    if days == ["*", "*", "*"] and "*" not in hour:
        text += ", every day"
    return text[:1].lower() + text[1:]
