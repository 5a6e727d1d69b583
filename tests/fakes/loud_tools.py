"""A tool whose result tries to notify everyone (for the broadcast tests)."""

from __future__ import annotations

from tools import tool


@tool
def loud() -> str:
    """Say something to everyone."""
    return "<!channel> <!here> <!everyone> <!subteam^S0OPS|@ops> ALERT"
