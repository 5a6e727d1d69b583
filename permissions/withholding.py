"""What of a thread's history the model may show to the person whose turn it is.

A thread is shared: an admin and a member may both ask in it. Each turn's model input holds
only the tool results its requester could have got themselves: a result of a tool they may
not use now (their roles, the switches, the channel: the policy's answer at the time of
their turn) is replaced by a short note, unless it is in one of their own earlier turns.
What people could read in the thread (questions and answers, user and assistant text) stays
as it is, and every call keeps a result, so the call/result pairing stays intact.

``withheld`` is the rule (pure); ``requester_scope`` applies it with the tools the
requester's toolset hands out, the same toolset (and so the same policy) their calls go
through. Every surface builds the model's input with it: the Slack turn's owner and the
console.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from typing import Any, Protocol

from tools.errors import ToolError
from tools.toolset import Toolset

Message = dict[str, Any]
UNKNOWN_TOOL = "an unknown tool"  # a result whose call is not found before it


class AskedTurn(Protocol):
    """One stored turn: its messages, and who asked (None: not known, stored before the
    requester was kept; such a turn is never anyone's own)."""

    @property
    def messages(self) -> Sequence[Message]: ...

    @property
    def user(self) -> str | None: ...


def note(tool: str) -> str:
    """What the model reads in place of a result withheld from the requester."""
    return f"[result of {tool} withheld: not available to you]"


def _own(turn: AskedTurn, requester: str) -> bool:
    return bool(requester) and turn.user == requester


def _calls(message: Message) -> dict[str, str]:
    """The tool names an assistant message calls, by call id."""
    names: dict[str, str] = {}
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            function = call.get("function") or {}
            names[str(call.get("id"))] = str(function.get("name") or UNKNOWN_TOOL)
    return names


def _results(messages: Sequence[Message]) -> Iterable[tuple[int, str]]:
    """Each tool result's index and the name of its tool, found by its ``tool_call_id`` in
    the assistant message before it."""
    calls: dict[str, str] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            calls = _calls(message)
        elif role == "tool":
            yield index, calls.get(str(message.get("tool_call_id")), UNKNOWN_TOOL)


def called_tools(turns: Iterable[AskedTurn], requester: str) -> set[str]:
    """The tools whose results are in turns not the requester's own: the ones to ask about."""
    return {
        name for turn in turns if not _own(turn, requester) for _, name in _results(turn.messages)
    }


def withheld(
    turns: Sequence[AskedTurn], requester: str, usable: Collection[str]
) -> list[list[Message]]:
    """Each turn's messages as ``requester`` may see them: in turns not their own, the
    content of every tool result whose tool is not in ``usable`` is replaced by
    :func:`note`. Nothing else changes (the input is not changed either)."""
    shown: list[list[Message]] = []
    for turn in turns:
        messages = list(turn.messages)
        if not _own(turn, requester):
            for index, name in _results(messages):
                if name not in usable:
                    messages[index] = {**messages[index], "content": note(name)}
        shown.append(messages)
    return shown


async def usable_tools(tools: Toolset, names: Iterable[str]) -> frozenset[str]:
    """Of ``names``, the tools ``tools`` hands out now, each asked once. For a toolset
    wrapped by the policy: registered, and allowed for its person (roles, switches, the
    channel); a name no longer registered is not usable. Asked one after another: the first
    answer caches the person's roles, so Slack is asked about them once at most."""
    usable = set()
    for name in sorted(set(names)):
        try:
            await tools.get_tool(name)
        except ToolError:  # unknown, forbidden, or any other refusal: not usable
            continue
        usable.add(name)
    return frozenset(usable)


Scope = Callable[[Sequence[AskedTurn]], Awaitable[list[list[Message]]]]


def requester_scope(requester: str, tools: Toolset) -> Scope:
    """The history as ``requester`` may see it, ``tools`` being the toolset their turn runs
    with (it says which tools they may use)."""

    async def scope(turns: Sequence[AskedTurn]) -> list[list[Message]]:
        usable = await usable_tools(tools, called_tools(turns, requester))
        return withheld(turns, requester, usable)

    return scope
