"""get_time: the current date and time in a time zone."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from tools.definition import tool
from tools.errors import ToolError


@functools.cache
def _zone_names() -> tuple[str, ...]:
    """Every IANA zone name, read from the tz database once."""
    return tuple(sorted(available_timezones()))


def _zone(name: str) -> ZoneInfo:
    cleaned = name.strip()
    if cleaned.upper() in ("UTC", "Z", "GMT"):
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(cleaned)
    except (ZoneInfoNotFoundError, ValueError):
        pass
    lowered = cleaned.lower().replace(" ", "_")
    for candidate in _zone_names():
        if candidate.lower() == lowered or candidate.lower().endswith("/" + lowered):
            return ZoneInfo(candidate)
    raise ToolError(
        f"Unknown time zone {name!r}. Use an IANA name such as 'Europe/Berlin', "
        "'America/New_York', 'Asia/Shanghai' or 'UTC'."
    )


def time_in(zone_name: str, now: datetime | None = None) -> dict[str, Any]:
    zone = _zone(zone_name)
    moment = (now or datetime.now(UTC)).astimezone(zone)
    offset = moment.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    sign = "+" if minutes >= 0 else "-"
    return {
        "timezone": zone.key,
        "iso": moment.isoformat(timespec="seconds"),
        "date": moment.date().isoformat(),
        "time": moment.strftime("%H:%M:%S"),
        "weekday": moment.strftime("%A"),
        "utc_offset": f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}",
    }


@tool
def get_time(timezone: str = "UTC") -> dict[str, Any]:
    """Get the current date, time and weekday in a time zone.

    Args:
        timezone: IANA time zone name, for example "Europe/Berlin", "America/New_York",
            "Asia/Shanghai" or "UTC". A city name such as "Tokyo" also works.
    """
    return time_in(timezone)
