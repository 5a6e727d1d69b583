"""A schedule's recurrence: a standard 5-field cron expression or one moment (a one-off), in
an IANA time zone; when it runs next, the latest run a window missed, its words, its JSON;
and ``parse_recurrence``, the checks a schedule's input passes (issue 34). Pure: every
"now" is passed in, timezone-aware; times come out in UTC.

Daylight saving follows Vixie cron (``cron.py`` says why cronsim): a fixed time in a
skipped hour runs once right after the jump, one in a repeated hour runs once (the first).
A one-off's naive time follows the same rules in its zone: 02:30 on the spring day is
03:00, on the autumn day the first 02:30.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.schedules import cron as cron_expression
from bot.schedules.errors import ScheduleInputError
from bot.turn.approval import duration

__all__ = ["COUNT_LIMIT", "Recurrence", "ScheduleInputError", "parse_recurrence"]

COUNT_LIMIT = 10_000  # latest_at_or_before counts this many runs in its window at most
_FIRST_LOOK_BACK = timedelta(days=1)


@dataclass(frozen=True)
class Recurrence:
    cron: str | None  # 5-field standard cron (minute hour dom month dow), None for a one-off
    at: datetime | None  # a one-off's moment (timezone-aware)
    timezone: str  # IANA name

    def __post_init__(self) -> None:
        if (self.cron is None) == (self.at is None):
            raise ValueError("a recurrence has a cron expression or a moment, not both")
        if self.at is not None:
            _aware(self.at)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def next_after(self, moment: datetime) -> datetime | None:
        """The first run strictly after ``moment`` (in UTC); None: a one-off already past,
        or a cron expression that matches no time in 50 years."""
        return next(iter(self.upcoming(moment, 1)), None)

    def upcoming(self, moment: datetime, n: int = 3) -> list[datetime]:
        """The next ``n`` runs strictly after ``moment``, in order, in UTC."""
        _aware(moment)
        if self.at is not None:
            at = self.at.astimezone(UTC)
            return [at] if at > moment and n > 0 else []
        assert self.cron is not None
        return list(islice(cron_expression.occurrences(self.cron, self.zone, moment), n))

    def latest_at_or_before(self, moment: datetime, since: datetime) -> tuple[datetime | None, int]:
        """The latest run in the window (``since``, ``moment``] and how many runs the window
        holds, the latest one included: the latest runs once, late, the others are counted
        as missed. (None, 0) for a window with no run in it.

        The work is bounded: past ``COUNT_LIMIT`` runs (a week of an every-minute schedule)
        the count stops at ``COUNT_LIMIT``, "at least", and the latest is found by looking
        back from ``moment``, a day and then twice as far each time."""
        _aware(moment)
        _aware(since)
        if self.at is not None:
            at = self.at.astimezone(UTC)
            return (at, 1) if since < at <= moment else (None, 0)
        assert self.cron is not None
        latest: datetime | None = None
        count = 0
        for found in cron_expression.occurrences(self.cron, self.zone, since):
            if found > moment:
                return latest, count
            latest, count = found, count + 1
            if count == COUNT_LIMIT:
                return self._latest_from(found, moment), count
        return latest, count

    def _latest_from(self, known: datetime, moment: datetime) -> datetime:
        """The latest run at or before ``moment``, ``known`` being one."""
        assert self.cron is not None
        look_back = _FIRST_LOOK_BACK
        while True:
            start = max(known, moment - look_back)
            latest = known
            for found in cron_expression.occurrences(self.cron, self.zone, start):
                if found > moment:
                    break
                latest = found
            if latest > known or start == known:
                return latest
            look_back *= 2

    def words(self) -> str:
        """The recurrence in plain words, with its zone: "at 09:00, Monday through Friday
        (Europe/Berlin)", "once, on 2026-12-04 at 09:00 (Europe/Berlin)"."""
        if self.at is not None:
            local = self.at.astimezone(self.zone)
            return f"once, on {local:%Y-%m-%d} at {local:%H:%M} ({self.timezone})"
        assert self.cron is not None
        return f"{cron_expression.in_words(self.cron)} ({self.timezone})"

    def to_json(self) -> str:
        at = None if self.at is None else self.at.isoformat()
        return json.dumps({"cron": self.cron, "at": at, "timezone": self.timezone})

    @classmethod
    def from_json(cls, text: str) -> Recurrence:
        data = json.loads(text)
        at = data["at"]
        return cls(
            cron=data["cron"],
            at=None if at is None else datetime.fromisoformat(at),
            timezone=data["timezone"],
        )


def parse_recurrence(
    *,
    cron: str | None,
    at: str | None,
    timezone: str,
    now: datetime,
    min_interval_s: int,
    one_off_lead_s: int = 10,
) -> Recurrence:
    """A schedule's recurrence from the tool's input, or ``ScheduleInputError`` saying what
    to fix: exactly one of ``cron`` and ``at`` (a blank one counts as not given); a cron
    expression that reads, runs at all and never runs closer than ``min_interval_s``
    apart; an ISO 8601 ``at`` (naive: in ``timezone``; with an offset: kept) at least
    ``one_off_lead_s`` after ``now``; a time zone the IANA database knows."""
    _aware(now)
    zone = _zone(timezone)
    cron = cron.strip() if cron is not None and cron.strip() else None
    at = at.strip() if at is not None and at.strip() else None
    if cron is not None and at is not None:
        raise ScheduleInputError(
            "Give either `cron` (a recurring schedule) or `at` (one time), not both."
        )
    if at is not None:
        return Recurrence(cron=None, at=_one_off(at, zone, now, one_off_lead_s), timezone=zone.key)
    if cron is None:
        raise ScheduleInputError(
            "Give `cron` (five fields, for a recurring schedule) or `at` (an ISO 8601 time, "
            "for one run)."
        )
    recurrence = Recurrence(cron=cron_expression.checked(cron), at=None, timezone=zone.key)
    if recurrence.next_after(now) is None:
        raise ScheduleInputError(
            f"'{recurrence.cron}' never runs: no time in the next 50 years matches it."
        )
    _often_enough(recurrence, now, min_interval_s)
    return recurrence


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleInputError(
            f"'{name}' is not a time zone the IANA database knows: use a name such as "
            "'Europe/Berlin', 'America/New_York' or 'UTC'."
        ) from None


def _one_off(text: str, zone: ZoneInfo, now: datetime, lead_s: int) -> datetime:
    example = f"for example '2026-12-04T09:00' (in {zone.key}) or '2026-12-04T09:00+01:00'"
    try:
        date.fromisoformat(text)
    except ValueError:
        pass
    else:
        raise ScheduleInputError(f"'{text}' is a date without a time of day: {example}.")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ScheduleInputError(f"'{text}' is not an ISO 8601 date and time: {example}.") from None
    moment = parsed if parsed.tzinfo is not None else _wall_clock(parsed, zone)
    ahead = (moment - now).total_seconds()
    if ahead <= 0:
        raise ScheduleInputError(
            f"'{text}' is in the past: it is now {now.astimezone(zone):%Y-%m-%d %H:%M} in "
            f"{zone.key}. Give a time at least {duration(lead_s)} ahead."
        )
    if ahead < lead_s:
        raise ScheduleInputError(
            f"'{text}' is only {duration(ahead)} ahead: a one-off must be at least "
            f"{duration(lead_s)} ahead."
        )
    return moment


def _wall_clock(naive: datetime, zone: ZoneInfo) -> datetime:
    """A naive time where ``zone`` is: in a repeated hour, the first; in a skipped hour,
    the first minute after the jump (as cron runs a job there)."""
    local = naive.replace(tzinfo=zone)
    if _exists(local):
        return local
    shifted = naive.replace(second=0, microsecond=0)
    while not _exists(shifted.replace(tzinfo=zone)):  # a gap is hours long at most
        shifted += timedelta(minutes=1)
    return shifted.replace(tzinfo=zone)


def _exists(local: datetime) -> bool:
    return local.astimezone(UTC).astimezone(local.tzinfo).replace(tzinfo=None) == local.replace(
        tzinfo=None
    )


def _often_enough(recurrence: Recurrence, now: datetime, min_interval_s: int) -> None:
    assert recurrence.cron is not None
    gap = cron_expression.shortest_gap(recurrence.cron, now)
    if gap is not None and gap.total_seconds() < min_interval_s:
        raise ScheduleInputError(
            f"'{recurrence.cron}' runs {duration(gap.total_seconds())} apart at its closest, "
            f"and a schedule's runs must be at least {duration(min_interval_s)} apart "
            "(schedules.min_interval_s): choose an expression that runs less often."
        )


def _aware(moment: datetime) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{moment!r} is naive: a recurrence takes timezone-aware times")
