"""The built-in tool ``remember(note)``: the model saves a note people asked it to remember to
the channel's memory (in a DM, to the person's own), and what a turn's messages say it saved.

The tool is made per turn (it saves for that turn's channel and person) and offered beside
the turn's other tools, outside the role policy: memory is its switch (the channel's
settings), not roles. Each call saves once, keyed by the turn and the call, so a call run
again after a crash finds its note instead of saving a second one. What it returns names
the note it saved; :func:`saved_notes` reads that back from a turn's stored messages (pure),
so the answer can say, visibly, what was remembered.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.state.channel_memory import (
    MAX_NOTE_CHARS,
    ChannelMemory,
    Full,
    Note,
    TooLong,
    memory_scope,
)
from tools.call_context import current_call
from tools.definition import Tool, tool
from tools.errors import ToolError
from tools.toolset import Toolset

REMEMBER = "remember"
CHANNEL, PERSONAL = "channel", "personal"  # whose memory a saved note is in


@dataclass(frozen=True)
class Remembered:
    """A note a turn's ``remember`` call saved (or had saved before a crash)."""

    id: str
    text: str
    memory: str  # CHANNEL or PERSONAL


def saved_words(note: Remembered) -> str:
    """What the answer says for a saved note (plain text; Slack's line escapes the note)."""
    where = "your memory" if note.memory == PERSONAL else "this channel's memory"
    return f"Saved to {where}: “{note.text}”"


def description(*, dm: bool) -> str:
    """What the model is told the tool does, where it is offered."""
    where = (
        "the person's own memory: later conversations in their direct messages with you "
        "see it, and nobody else"
        if dm
        else "this channel's memory: every later conversation in this channel sees it, and "
        "everyone in the channel can see that it was saved"
    )
    return (
        f"Save a note someone asked you to remember to {where}. Use it only when a person "
        "asks you to remember something; write the note as a short, self-contained "
        f"statement (at most {MAX_NOTE_CHARS} characters). The saved note is shown in the "
        "conversation."
    )


def remember_tool(
    memory: ChannelMemory,
    team: str,
    channel: str,
    user: str,
    entry_id: str,
    command: str = "/agent",
) -> Tool:
    """``remember`` for one turn: ``user``'s turn (queue entry ``entry_id``) in ``channel``
    of the workspace ``team``; ``command``: the slash command people manage notes with."""
    dm = channel.startswith("D")
    scope = memory_scope(channel, user)

    async def remember(note: str) -> dict[str, str]:
        """Args:
        note: What to remember, as a short statement.
        """
        text = note.strip()
        if not text:
            raise ToolError("The note is empty: nothing was saved.")
        call = current_call()
        said = call.call_id if call is not None else hashlib.sha256(text.encode()).hexdigest()
        added = await memory.add(team, scope, text, user, channel, f"{entry_id}:{said}")
        if isinstance(added, Full):
            whose = "Your memory" if dm else "This channel's memory"
            who = "remove some of yours" if dm else "ask an admin to remove some"
            raise ToolError(
                f"{whose} is full ({added.limit} notes): nothing was saved. To save more, "
                f"{who} with `{command} forget <id>` (`{command} memory` lists them)."
            )
        if isinstance(added, TooLong):
            raise ToolError(
                f"The note is {added.chars} characters long; a note may have at most "
                f"{added.limit}. Nothing was saved: say it shorter."
            )
        saved: Note = added.note  # Saved, or Duplicate: this call saved it before
        return {"saved": saved.text, "id": saved.id, "memory": PERSONAL if dm else CHANNEL}

    made: Tool = tool(name=REMEMBER, description=description(dm=dm), idempotent=True)(remember)
    return made


class WithRemember:
    """``inner`` with the ``remember`` tool beside its tools (in place of any tool of that
    name it has)."""

    def __init__(self, inner: Toolset, remember: Tool) -> None:
        self.inner = inner
        self.remember = remember

    async def list_tools(self) -> Sequence[Tool]:
        others = [t for t in await self.inner.list_tools() if t.name != REMEMBER]
        return [*others, self.remember]

    async def get_tool(self, name: str) -> Tool:
        if name == REMEMBER:
            return self.remember
        return await self.inner.get_tool(name)


def with_remember(inner: Toolset, remember: Tool | None) -> Toolset:
    """``inner``, offering ``remember`` too when it is given (memory is on)."""
    return inner if remember is None else WithRemember(inner, remember)


def saved_notes(messages: Iterable[dict[str, Any]]) -> list[Remembered]:
    """The notes a turn's ``remember`` calls saved, in the order of the calls, each once
    (pure): its assistant messages name the calls, its tool results what each saved."""
    remembering: list[str] = []
    results: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and function.get("name") == REMEMBER:
                    remembering.append(str(call.get("id")))
        elif message.get("role") == "tool":
            results[str(message.get("tool_call_id"))] = str(message.get("content") or "")
    found: dict[str, Remembered] = {}
    for call_id in remembering:
        saved = _saved(results.get(call_id, ""))
        if saved is not None:
            found.setdefault(saved.id, saved)
    return list(found.values())


def _saved(content: str) -> Remembered | None:
    """The note a ``remember`` result names; None for an error or anything else."""
    try:
        value = json.loads(content)
    except ValueError:
        return None
    if not isinstance(value, dict) or "error" in value:
        return None
    text, id_, memory = value.get("saved"), value.get("id"), value.get("memory")
    if not (isinstance(text, str) and isinstance(id_, str) and memory in (CHANNEL, PERSONAL)):
        return None
    return Remembered(id_, text, str(memory))
