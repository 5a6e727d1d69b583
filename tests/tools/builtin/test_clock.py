from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tools import ToolError
from tools.builtin.clock import get_time, time_in

MOMENT = datetime(2026, 7, 1, 12, 30, 15, tzinfo=UTC)


def test_a_named_zone_with_summer_time() -> None:
    assert time_in("Europe/Berlin", MOMENT) == {
        "timezone": "Europe/Berlin",
        "iso": "2026-07-01T14:30:15+02:00",
        "date": "2026-07-01",
        "time": "14:30:15",
        "weekday": "Wednesday",
        "utc_offset": "+02:00",
    }


def test_negative_and_fractional_offsets() -> None:
    assert time_in("America/New_York", MOMENT)["utc_offset"] == "-04:00"
    assert time_in("Asia/Kolkata", MOMENT)["utc_offset"] == "+05:30"


def test_aliases_and_city_names() -> None:
    assert time_in("utc", MOMENT)["timezone"] == "UTC"
    assert time_in("tokyo", MOMENT)["timezone"] == "Asia/Tokyo"
    assert time_in("new york", MOMENT)["timezone"] == "America/New_York"


def test_unknown_zone() -> None:
    with pytest.raises(ToolError, match="Unknown time zone 'Mars/Base'"):
        time_in("Mars/Base", MOMENT)


async def test_the_tool_reads_the_clock() -> None:
    result = await get_time.invoke({"timezone": "UTC"})
    now = datetime.now(UTC)
    shown = datetime.fromisoformat(result["iso"])
    assert abs((now - shown).total_seconds()) < 5
    assert (await get_time.invoke({}))["timezone"] == "UTC"
