"""A config key naming a time zone, checked once for every section that has one (pure)."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def known_zone(name: str) -> str:
    """``name`` when the IANA database knows it; a ValueError a config error reads out."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            "not a time zone the IANA database knows (e.g. UTC, Europe/Berlin)"
        ) from None
    return name
