"""A tool call's arguments as lines a person reads (pure): the model's words, shown as they
are and never read as formatting.

Keys in the order they were stored (the tool's own parameter order), one a line; a string in
quotes, a string of several lines as those lines indented under its key (``key: |``), other
values as JSON, nested objects and lists indented beneath their key. Every line a value
writes after its key's line is indented, so no value can pass for another key. Invisible and
reordering characters are written out (``[U+202E]``: :func:`bot.slack.blocks.escape.visible`).
On the card a long value is cut at :data:`VALUE_CHARS` characters and all of them at
:data:`ARGUMENTS_CHARS`, each cut saying so; "Show all" shows them whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from bot.slack.blocks.escape import visible

VALUE_CHARS = 300  # an argument value longer than this is cut on the card
ARGUMENTS_CHARS = 1_500  # all of a call's arguments on the card
NO_ARGUMENTS = "(no arguments)"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_.$@-]{1,100}$")
_INDENT = "  "


@dataclass(frozen=True)
class Shown:
    """The arguments as text for a preformatted block, and whether any of it was cut."""

    text: str
    cut: bool


def shown_arguments(
    arguments: str, *, value_chars: int | None = VALUE_CHARS, total_chars: int | None = None
) -> Shown:
    """``arguments`` (the JSON text stored with a request) as lines; each string value cut
    at ``value_chars`` and the whole at ``total_chars`` (None: not cut)."""
    lines = _Lines(value_chars)
    try:
        value = json.loads(arguments) if arguments else {}
        if isinstance(value, dict):
            lines.object(value, 0)
            text = "\n".join(lines.lines) if lines.lines else NO_ARGUMENTS
        else:  # not an object of arguments: the text as it was stored
            text = visible(arguments)
    except (ValueError, RecursionError):  # the loop lets neither through; stored ones may
        text, lines.cut = visible(arguments), False
    if total_chars is not None and len(text) > total_chars:
        return Shown(text[:total_chars].rstrip() + "\n" + cut_note(total_chars), True)
    return Shown(text, lines.cut)


def cut_note(chars: int) -> str:
    return f"… (cut at {chars:,} characters)"


class _Lines:
    def __init__(self, value_chars: int | None) -> None:
        self.value_chars = value_chars
        self.lines: list[str] = []
        self.cut = False

    def object(self, value: dict[str, Any], depth: int) -> None:
        for key, item in value.items():
            self.item(_key(str(key)) + ":", item, depth)

    def item(self, head: str, value: Any, depth: int) -> None:
        """One key's (or list element's) lines: ``head``, then the value."""
        pad = _INDENT * depth
        if isinstance(value, str):
            text, note = self._cut(value)
            if "\n" in text:
                inner = pad + _INDENT
                self.lines.append(f"{pad}{head} |")
                self.lines += [inner + visible(line) for line in text.split("\n")]
                if note:
                    self.lines.append(inner + note)
            else:
                self.lines.append(f'{pad}{head} "{visible(text)}"{note}')
        elif isinstance(value, dict) and value:
            self.lines.append(f"{pad}{head}")
            self.object(value, depth + 1)
        elif isinstance(value, list) and value:
            self.lines.append(f"{pad}{head}")
            for element in value:
                self.item("-", element, depth + 1)
        else:
            self.lines.append(f"{pad}{head} {visible(json.dumps(value, ensure_ascii=False))}")

    def _cut(self, text: str) -> tuple[str, str]:
        """The value, cut; and the note saying it was ("" when it was not)."""
        if self.value_chars is None or len(text) <= self.value_chars:
            return text, ""
        self.cut = True
        return text[: self.value_chars], " " + cut_note(self.value_chars)


def _key(key: str) -> str:
    """A key as it is shown: bare when it is a plain name, else as a JSON string (so a key
    can hold no line break, colon or space that would read as something else)."""
    return key if _BARE_KEY.match(key) else visible(json.dumps(key, ensure_ascii=False))
