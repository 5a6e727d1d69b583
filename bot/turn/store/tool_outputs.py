"""A turn's tool outputs as Redis keeps them, for a person who asks to see them: the thread's
history holds a finished turn (under its entry id), the turn's record a settled one, and its
journal one still running or waiting for approval. Read only; nothing here decides who may
see what (the Slack listener asks the policy)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.history import RedisHistory
from bot.turn.store.records import TurnRecords

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolOutput:
    """One call's result as the model read it (cut as the loop cuts long output)."""

    call_id: str
    name: str
    content: str


def outputs_of(messages: Iterable[Message]) -> list[ToolOutput]:
    """Each tool result of ``messages``, in order, named by its call in the assistant
    message before it (a result with no call is left out: nobody asked for it)."""
    calls: dict[str, str] = {}
    found: list[ToolOutput] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            calls = {
                str(call.get("id")): str((call.get("function") or {}).get("name") or "")
                for call in message.get("tool_calls") or ()
                if isinstance(call, dict)
            }
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            if calls.get(call_id):
                found.append(ToolOutput(call_id, calls[call_id], str(message.get("content") or "")))
    return found


class ToolOutputs:
    def __init__(self, history: RedisHistory, records: TurnRecords) -> None:
        self.history = history
        self.records = records

    async def of_turn(self, thread: ThreadKey, entry_id: str) -> list[ToolOutput] | None:
        """The outputs of the turn ``entry_id`` in ``thread``; None when Redis keeps
        nothing of it any more (its history expired or was cut, or there was no such turn)."""
        stored = await self.history.turn_messages(thread, entry_id)
        if stored is not None:
            return outputs_of(stored)
        record = await self.records.read(entry_id)
        if record is None:
            return None
        return outputs_of(record.messages or record.journal)
