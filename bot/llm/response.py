"""What one model call returns."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bot.llm.usage import Usage

# The most a call's arguments may be (UTF-8). A stream stops keeping them past it; the loop
# refuses such a call (bot/agent/arguments.py).
ARGUMENTS_MAX_BYTES = 256 * 1024
# A tool's name has at most 64 characters: a longer one names no tool, and is cut here.
NAME_MAX_CHARS = 128
# What arguments a server sent as something other than text (or JSON text) become.
UNREADABLE_ARGUMENTS = "<arguments that are not JSON text>"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, exactly as the model produced it

    def to_message(self) -> dict[str, object]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


def arguments_text(value: Any) -> str:
    """A call's arguments as text. Some servers send them as a JSON value instead of JSON
    text: encoded here, unless they cannot be (nested too deep, say), when the loop refuses
    them as not JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return UNREADABLE_ARGUMENTS


@dataclass(frozen=True)
class ModelResponse:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str = ""


def with_unique_ids(calls: list[ToolCall], prefix: str) -> list[ToolCall]:
    """Give every call a non-empty id unique within the response.

    Some servers (older vLLM, Ollama, several Qwen deployments) send empty or repeated ids;
    results are matched to calls by id, so each must be distinct. The first call with a
    given id keeps it; the others get fresh ids that clash with none.
    """
    taken = {call.id for call in calls if call.id}
    seen: set[str] = set()
    fixed = []
    for position, call in enumerate(calls):
        call_id = call.id
        if not call_id or call_id in seen:
            call_id = f"{prefix}_{position}"
            while call_id in taken:
                call_id += "_"
            taken.add(call_id)
        seen.add(call_id)
        fixed.append(call if call_id == call.id else ToolCall(call_id, call.name, call.arguments))
    return fixed
