"""What of a thread's history the model may show to the person whose turn it is.

A thread is shared: an admin and a member may both ask in it. Each turn's model input holds
only what its requester could have got themselves. In turns not their own, a call to a tool
they may not use now (their roles, the switches, the channel: the policy's answer at the
time of their turn) keeps its place, but its arguments and its result are replaced by short
notes. So are the arguments and results of every call that could carry what was withheld:

- the other calls of the same round, whichever their order: a round's calls run together,
  so none of their results can be said to come before the withheld one (a tool may read
  what another changed); their arguments were written before any result of the round, but
  the round is withheld whole rather than part by part;
- every call of every later round, in that turn and in later turns that are not the
  requester's own: from the withheld round on, the model that wrote those arguments and
  saw those results may have had the withheld data in its input (the turn's own model, or
  another person's who may see it; the thread's history carries it from turn to turn).

What people could read in the thread (questions and answers, user and assistant text, the
tool names on the task cards) stays as it is, and every call keeps a result, so the
call/result pairing stays intact. The requester's own turns stay whole: their model was
given what they may see.

A tool that runs as its person (``Tool.per_person``: an MCP server each person signs in to)
is never usable in another person's turn: two people calling it read two accounts.

``withheld`` is the rule (pure); ``requester_scope`` applies it with the tools the
requester's toolset hands out, the same toolset (and so the same policy) their calls go
through. Every surface builds the model's input with it: the Slack turn's owner and the
console.
"""

from __future__ import annotations

import json
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
    """What the model reads in place of a result of a tool the requester may not use."""
    return f"[result of {tool} withheld: not available to you]"


def carried_note(tool: str) -> str:
    """What the model reads in place of a result that may carry what was withheld."""
    return f"[result of {tool} withheld: it may carry what is not available to you]"


def arguments_note(tool: str, *, restricted: bool) -> str:
    """What the model reads in place of a withheld call's arguments (still a JSON object,
    as every server expects of a call's arguments)."""
    why = "not available to you" if restricted else "they may carry what is not available to you"
    return json.dumps({"withheld": f"arguments of {tool}: {why}"})


def _own(turn: AskedTurn, requester: str) -> bool:
    return bool(requester) and turn.user == requester


def _name(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    return str((function or {}).get("name") or UNKNOWN_TOOL)


def _calls(message: Message) -> dict[str, str]:
    """The tool names an assistant message calls, by call id."""
    return {
        str(call.get("id")): _name(call)
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict)
    }


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
    """The tools called, or with results, in turns not the requester's own: the ones to ask
    about."""
    names: set[str] = set()
    for turn in turns:
        if _own(turn, requester):
            continue
        for message in turn.messages:
            if message.get("role") == "assistant":
                names.update(_calls(message).values())
        names.update(name for _, name in _results(turn.messages))
    return names


def withheld(
    turns: Sequence[AskedTurn], requester: str, usable: Collection[str]
) -> list[list[Message]]:
    """Each turn's messages as ``requester`` may see them: in turns not their own, from the
    first round that calls a tool not in ``usable`` (or has a result of one) on, every
    call's arguments and every result are replaced by notes (:func:`note` for a tool not
    usable, :func:`carried_note` for one that is). Nothing else changes (the input is not
    changed either)."""
    shown: list[list[Message]] = []
    carrying = False  # a round withheld already: what comes after may carry it
    for turn in turns:
        messages = list(turn.messages)
        if not _own(turn, requester):
            carrying = _withhold_turn(messages, usable, carrying)
        shown.append(messages)
    return shown


def _withhold_turn(messages: list[Message], usable: Collection[str], carrying: bool) -> bool:
    """Withhold, in place, the rounds of one turn not the requester's own from the first
    that must be on; whether the thread carries withheld data after this turn."""
    calls: dict[str, str] = {}
    round_withheld = False
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            calls = _calls(message)
            round_withheld = carrying or any(name not in usable for name in calls.values())
            if round_withheld and message.get("tool_calls"):
                messages[index] = _without_arguments(message, usable)
            carrying = carrying or round_withheld
        elif role == "tool":
            # A result with no call before it counts as one of an unknown tool: withheld.
            name = calls.get(str(message.get("tool_call_id")), UNKNOWN_TOOL)
            if name not in usable:
                messages[index] = {**message, "content": note(name)}
                carrying = round_withheld = True
            elif round_withheld:
                messages[index] = {**message, "content": carried_note(name)}
    return carrying


def _without_arguments(message: Message, usable: Collection[str]) -> Message:
    calls = []
    for call in message.get("tool_calls") or ():
        if not isinstance(call, dict):
            calls.append(call)
            continue
        name = _name(call)
        function = {
            **(call.get("function") or {}),
            "arguments": arguments_note(name, restricted=name not in usable),
        }
        calls.append({**call, "function": function})
    return {**message, "tool_calls": calls}


async def usable_tools(tools: Toolset, names: Iterable[str]) -> frozenset[str]:
    """Of ``names``, the tools ``tools`` hands out now, each asked once. For a toolset
    wrapped by the policy: registered, and allowed for its person (roles, switches, the
    channel); a name no longer registered is not usable; nor is a tool that runs as its
    person (``per_person``: an MCP server that signs each person in), whatever the roles say,
    since another's call of it read their own account. Asked one after another: the first
    answer caches the person's roles, so Slack is asked about them once at most."""
    usable = set()
    for name in sorted(set(names)):
        try:
            found = await tools.get_tool(name)
        except ToolError:  # unknown, forbidden, or any other refusal: not usable
            continue
        if found.per_person:  # another's call ran as them: what it read is theirs alone
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
