"""No broadcast from the model: ``<!channel>``, ``<!here>``, ``<!everyone>`` and user-group
mentions (``<!subteam^S…>``) in what the bot sends to Slack become plain text (``@channel``,
``@here``, ``@everyone``, the group's handle), so a model, a web page or a tool result can
never notify a whole channel. A person's mention (``<@U…>``) stays. A workspace may opt in
with ``slack.allow_broadcast`` (pure).
"""

from __future__ import annotations

import re
from typing import Any

SPECIAL = re.compile(r"<!(channel|here|everyone)(?:\|[^<>]*)?>")
GROUP = re.compile(r"<!subteam\^[A-Za-z0-9]+(?:\|([^<>]*))?>")
HOLD_CHARS = 64  # a "<" this close to the end of streamed text may open a mention: wait


def defused(text: str) -> str:
    """``text`` with every broadcast mention as plain text."""
    if "<!" not in text:
        return text
    text = SPECIAL.sub(lambda m: f"@{m.group(1)}", text)
    return GROUP.sub(lambda m: (m.group(1) or "@group").strip() or "@group", text)


def defuse(value: Any) -> Any:
    """Every string inside ``value`` (a Web API call's arguments: text, blocks, chunks,
    JSON strings) defused."""
    if isinstance(value, str):
        return defused(value)
    if isinstance(value, dict):
        return {key: defuse(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [defuse(item) for item in value]
    return value


def whole_until(text: str) -> int:
    """Where ``text`` may be cut before it goes out in pieces (a stream's appends): before a
    ``<`` near its end that no ``>`` closes yet, so a mention is never cut in two (each
    piece is defused on its own)."""
    cut = text.rfind("<")
    if cut != -1 and ">" not in text[cut:] and len(text) - cut <= HOLD_CHARS:
        return cut
    return len(text)
