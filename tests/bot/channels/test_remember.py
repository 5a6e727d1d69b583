"""The remember tool (bot/channels/remember.py) on the real Redis: what it saves where, once
per turn and call; the errors the model relays; how a turn's toolset offers it; and what a
turn's stored messages say it saved (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.channels.remember import (
    CHANNEL,
    PERSONAL,
    REMEMBER,
    Remembered,
    remember_tool,
    saved_notes,
    saved_words,
    with_remember,
)
from bot.process.state import State
from bot.state.channel_memory import MAX_NOTES
from tools.call_context import CallScope, calling
from tools.definition import Tool, tool
from tools.errors import ToolError
from tools.toolset import StaticToolset


async def call(made: Tool, note: str, call_id: str = "c1") -> Any:
    with calling(CallScope(call_id, REMEMBER)):
        return await made.invoke({"note": note})


async def test_a_note_goes_to_the_channels_memory_once_per_call(state: State) -> None:
    memory = state.shared.memory
    made = remember_tool(memory, "T1", "C0SUPPORT", "U0ANA", "1-0")
    assert made.name == REMEMBER and made.idempotent
    assert "this channel's memory" in made.description
    first = await call(made, "  The runbook is at go/runbook.  ")
    assert first == {"saved": "The runbook is at go/runbook.", "id": "n1", "memory": CHANNEL}
    # The same call run again (a worker died after it): the note is found, not saved twice.
    assert await call(made, "The runbook is at go/runbook.") == first
    assert await call(made, "Deploys are on Tuesdays.", "c2") == {
        "saved": "Deploys are on Tuesdays.",
        "id": "n2",
        "memory": CHANNEL,
    }
    notes = await memory.notes("C0SUPPORT")
    assert [(n.id, n.by, n.channel) for n in notes] == [
        ("n2", "U0ANA", "C0SUPPORT"),
        ("n1", "U0ANA", "C0SUPPORT"),
    ]
    audited = [e for e in await state.shared.audit.latest(10) if e.kind == "memory"]
    assert len(audited) == 2  # one entry a note


async def test_in_a_dm_the_note_is_the_persons_own(state: State) -> None:
    made = remember_tool(state.shared.memory, "T1", "D0ANA", "U0ANA", "2-0")
    assert "own memory" in made.description
    assert (await call(made, "I prefer metric units."))["memory"] == PERSONAL
    assert [n.text for n in await state.shared.memory.notes("user:U0ANA")] == [
        "I prefer metric units."
    ]
    assert await state.shared.memory.notes("D0ANA") == []


async def test_refusals_are_errors_the_model_can_relay(state: State) -> None:
    made = remember_tool(state.shared.memory, "T1", "C0FULL", "U0ANA", "3-0", "/ops")
    with pytest.raises(ToolError, match="at most 500"):
        await call(made, "x" * 501)
    with pytest.raises(ToolError, match="empty"):
        await call(made, "   ")
    for n in range(MAX_NOTES):
        await call(made, f"note {n}", f"c{n}")
    with pytest.raises(ToolError) as full:
        await call(made, "one too many", "c-last")
    assert "full (50 notes)" in str(full.value) and "ask an admin" in str(full.value)
    assert "`/ops forget <id>`" in str(full.value)
    personal = remember_tool(state.shared.memory, "T1", "D0BEA", "U0BEA", "4-0")
    for n in range(MAX_NOTES):
        await call(personal, f"note {n}", f"c{n}")
    with pytest.raises(ToolError, match="Your memory is full"):
        await call(personal, "one too many", "c-last")


@tool
def get_time() -> str:
    """The time."""
    return "noon"


@tool(name="remember")
def impostor(note: str) -> str:
    """Another tool of the same name."""
    return note


async def test_a_toolset_offers_it_beside_its_own_tools_in_place_of_a_namesake(
    state: State,
) -> None:
    made = remember_tool(state.shared.memory, "T1", "C0X", "U0ANA", "5-0")
    inner = StaticToolset([get_time, impostor])
    assert with_remember(inner, None) is inner  # memory off: the toolset as it was
    offered = with_remember(inner, made)
    assert [t.name for t in await offered.list_tools()] == ["get_time", "remember"]
    assert await offered.get_tool("remember") is made
    assert await offered.get_tool("get_time") is get_time


def assistant(*names: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for cid, name in names
        ],
    }


def result(call_id: str, value: Any) -> dict[str, Any]:
    content = value if isinstance(value, str) else json.dumps(value)
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def test_a_turns_messages_say_what_it_saved() -> None:
    saved = {"saved": "Deploys are on Tuesdays.", "id": "n4", "memory": CHANNEL}
    messages = [
        {"role": "user", "content": "remember deploys are on Tuesdays"},
        assistant(("c1", REMEMBER), ("c2", "get_time"), ("c3", REMEMBER)),
        result("c1", saved),
        result("c2", {"saved": "not a note", "id": "n9", "memory": CHANNEL}),  # another tool
        result("c3", {"error": "ToolError", "message": "The note is empty."}),
        assistant(("c4", REMEMBER), ("c5", REMEMBER), ("c6", REMEMBER)),
        result("c4", saved),  # the same note again (a duplicate): named once
        result("c5", "not JSON"),
        result("c6", {"saved": "Mine.", "id": "n1", "memory": PERSONAL}),
        {"role": "assistant", "content": "Noted."},
    ]
    assert saved_notes(messages) == [
        Remembered("n4", "Deploys are on Tuesdays.", CHANNEL),
        Remembered("n1", "Mine.", PERSONAL),
    ]
    assert saved_notes([{"role": "user", "content": "hi"}]) == []
    assert [saved_words(n) for n in saved_notes(messages)] == [
        "Saved to this channel's memory: “Deploys are on Tuesdays.”",
        "Saved to your memory: “Mine.”",
    ]
