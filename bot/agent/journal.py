"""Saving a turn's progress as it happens, so another worker can resume it after a crash.

The loop records each message the moment it is final: the user message, an assistant message
with its tool calls (before the tools run), and each tool result as its tool finishes. A
resumed turn starts from those messages: the user message is not added twice, and tools whose
results were saved do not run again. A call deferred (it waits for a person: the turn parks)
leaves a marker instead of a result: it never started, so on resume it simply runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.agent.result import ToolExecution
from bot.llm.response import ToolCall

Message = dict[str, Any]


class Journal(Protocol):
    async def record(self, message: Message) -> None:
        """Save a message the moment it is final. Raising ends the turn: the loop does not
        go on with work it could not save."""
        ...

    async def record_call(self, execution: ToolExecution, message: Message) -> None:
        """Save a call's result (``message``) the moment its tool finished, like
        :meth:`record`; ``execution`` says how the call ran, for what a surface keeps of it
        in the same step (its audit entry)."""
        ...

    async def claim_rerun(self, call_id: str) -> bool:
        """Note that a call cut off by a crash runs again; False when it already did once."""
        ...


DEFERRED = "deferred"  # the role of a journal marker: this call was deferred, not run


def deferred_marker(call_id: str) -> Message:
    """What the journal keeps for a call that was deferred (never a message to the model)."""
    return {"role": DEFERRED, "tool_call_id": call_id}


@dataclass
class Resumed:
    """What a journal held, tidied, ready to continue from.

    ``messages`` ends with the unfinished round's assistant message (without its results)
    when there is one; ``saved_results`` are that round's results already saved, and
    ``open_calls`` its calls that still need to run; ``deferred`` the ids of those that
    were deferred (they never started).
    """

    messages: list[Message]
    open_calls: list[ToolCall] = field(default_factory=list)
    saved_results: dict[str, Message] = field(default_factory=dict)
    rounds: int = 0
    deferred: frozenset[str] = frozenset()


def resume_from(saved: Sequence[Message]) -> Resumed:
    """Put each round's saved results in call order and find the calls with no result yet.

    Results are saved in the order tools finished; the model expects call order. Calls of
    the last round that have no saved result were running when the worker died: they run
    again. A result with no call is dropped; an earlier round with a missing result is left
    for :func:`bot.agent.messages.repair` to mark as interrupted.
    """
    deferred = frozenset(str(m.get("tool_call_id")) for m in saved if m.get("role") == DEFERRED)
    saved = [m for m in saved if m.get("role") != DEFERRED]
    messages: list[Message] = []
    rounds = 0
    index = 0
    last_open: tuple[int, list[ToolCall], dict[str, Message]] | None = None
    while index < len(saved):
        message = saved[index]
        index += 1
        if message.get("role") == "tool":
            continue
        messages.append(message)
        last_open = None
        if message.get("role") != "assistant":
            continue
        rounds += 1
        results: dict[str, Message] = {}
        while index < len(saved) and saved[index].get("role") == "tool":
            results.setdefault(str(saved[index].get("tool_call_id")), saved[index])
            index += 1
        calls = [_call(c) for c in message.get("tool_calls") or ()]
        missing = [call for call in calls if call.id not in results]
        if missing:
            last_open = (len(messages), missing, results)
        messages.extend(results[call.id] for call in calls if call.id in results)
    if last_open is None:
        return Resumed(messages, rounds=rounds)
    cut, missing, results = last_open
    return Resumed(messages[:cut], missing, results, rounds, deferred)


def _call(data: dict[str, Any]) -> ToolCall:
    function = data.get("function") or {}
    return ToolCall(str(data.get("id")), function.get("name", ""), function.get("arguments", ""))
