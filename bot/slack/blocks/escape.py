"""Text from elsewhere (an MCP server's words, the model's arguments) made safe to show in
Slack (pure): escaped for mrkdwn, and with its invisible characters made visible."""

from __future__ import annotations

import unicodedata

# Characters a reader cannot see, or that reorder what they see: shown as ``[U+XXXX]``.
# Every format character (category Cf: the bidi embeddings, overrides and isolates
# U+202A-U+202E and U+2066-U+2069, the zero-width space, joiners and marks U+200B-U+200F,
# the Arabic letter mark U+061C, the byte order mark U+FEFF, ...), control characters but
# the line feed and the tab, the line and paragraph separators, surrogates, private-use and
# unassigned code points, and the blank letters and marks some fonts draw as nothing.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_BLANK = frozenset({0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, 0x2800})
_BLANK |= frozenset(range(0xFE00, 0xFE10))  # variation selectors
_KEPT = frozenset("\n\t")


def escaped(text: str) -> str:
    """``&``, ``<`` and ``>`` escaped, so the text can neither mention anyone
    (``<!channel>``, ``<@U1>``) nor link anywhere."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def hidden(char: str) -> bool:
    """Whether ``char`` is one a reader would not see as itself (see :func:`visible`)."""
    if char in _KEPT:
        return False
    return ord(char) in _BLANK or unicodedata.category(char) in _INVISIBLE_CATEGORIES


def visible(text: str) -> str:
    """``text`` with every invisible or reordering character written out as ``[U+XXXX]``
    (``"\\u202etxt.exe"`` reads ``[U+202E]txt.exe``, never ``exe.txt``); line feeds and tabs
    are kept."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(f"[U+{ord(c):04X}]" if hidden(c) else c for c in text)
