"""Text from elsewhere (an MCP server's words) made safe to show in Slack (pure)."""

from __future__ import annotations


def escaped(text: str) -> str:
    """``&``, ``<`` and ``>`` escaped, so the text can neither mention anyone
    (``<!channel>``, ``<@U1>``) nor link anywhere."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
