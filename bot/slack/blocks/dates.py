"""A moment as Slack's date code (pure): every reader sees it in their own time zone, and
where Slack cannot render it, the fallback in UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def slack_date(at: float) -> str:
    """``<!date^EPOCH^{date_short_pretty} at {time}|01 Dec 2026 09:00 UTC>``."""
    fallback = datetime.fromtimestamp(at, UTC).strftime("%d %b %Y %H:%M UTC")
    return f"<!date^{int(at)}^{{date_short_pretty}} at {{time}}|{fallback}>"
