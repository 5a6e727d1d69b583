"""Reading a slash command's text (pure)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

_USER = re.compile(r"^<@([UW][A-Z0-9]+)(?:\|[^>]*)?>$|^([UW][A-Z0-9]{2,})$")
_FIRST_WORD = re.compile(r"\s*\S+")

CHANNEL_CHANGE = "channel change"  # `channel <key> …`: admins'; `channel` alone: everyone's


@dataclass(frozen=True)
class Invocation:
    name: str  # the subcommand, lower case; "tools all" (and connections, schedules) is one
    args: list[str]
    text: str = ""  # what follows the subcommand's own word, as typed (spacing kept)

    @property
    def said(self) -> str:
        """The subcommand as the person typed it (``channel tools`` for a change)."""
        if self.name == CHANNEL_CHANGE:
            return f"channel {self.args[0].lower()}"
        return self.name


def parse(text: str) -> Invocation:
    words = text.split()
    if not words:
        return Invocation("help", [])
    name, args = words[0].lower(), words[1:]
    rest = after_first_word(text)
    if name in ("tools", "connections", "schedules") and args and args[0].lower() == "all":
        return Invocation(f"{name} all", args[1:], after_first_word(rest))
    if name == "channel" and args:
        return Invocation(CHANNEL_CHANGE, args, rest)
    return Invocation(name, args, rest)


def after_first_word(text: str) -> str:
    """``text`` without its first word and the spaces before it (the rest kept as typed)."""
    match = _FIRST_WORD.match(text)
    return text[match.end() :] if match else ""


def user_id(word: str) -> str | None:
    """A user from ``<@U123>``, ``<@U123|name>`` or ``U123``."""
    match = _USER.match(word.strip())
    if match is None:
        return None
    return match.group(1) or match.group(2)


def closest(word: str, choices: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str], template: str = "`{}`") -> str:
    match = closest(word, choices)
    return f" Did you mean {template.format(match)}?" if match else ""
