"""A clock a test moves by hand (no sleeping): for budget days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class MovableClock:
    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def move(self, by: timedelta) -> None:
        self.now += by
