"""OpenAI-format messages: constructors, and the repair done before every model call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.llm.response import ToolCall
from tools.output import error_output

Message = dict[str, Any]

INTERRUPTED = error_output(
    "Interrupted", "This tool call was interrupted before it returned a result."
)


def system_message(text: str) -> Message:
    return {"role": "system", "content": text}


def user_message(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant_message(text: str, tool_calls: Sequence[ToolCall] = ()) -> Message:
    message: Message = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = [call.to_message() for call in tool_calls]
    elif not text:
        message["content"] = ""
    return message


def tool_message(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def repair(messages: Sequence[Message]) -> list[Message]:
    """Make the list valid for any Chat Completions server.

    Every assistant tool call gets exactly one result right after its message (a missing one
    becomes a synthetic "interrupted" result); a tool result with no call before it is dropped.
    The input is not changed.
    """
    repaired: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        role = message.get("role")
        if role == "tool":
            continue  # a result with no call in the assistant message just before it
        repaired.append(message)
        calls = (message.get("tool_calls") or ()) if role == "assistant" else ()
        call_ids = [str(call.get("id")) for call in calls]
        if not call_ids:
            continue
        results: dict[str, Message] = {}
        while index < len(messages) and messages[index].get("role") == "tool":
            result = messages[index]
            index += 1
            call_id = str(result.get("tool_call_id"))
            if call_id in call_ids and call_id not in results:
                results[call_id] = result
        for call_id in call_ids:
            repaired.append(results.get(call_id) or tool_message(call_id, INTERRUPTED))
    return repaired
