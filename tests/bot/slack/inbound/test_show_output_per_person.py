"""What "Show output" shows of a tool that ran as its person (an MCP server each person
signs in to): its output is for the turn's requester alone, whoever else may use a tool of
that name; the shared tools' outputs follow the policy as before (the real Redis keeps the
turn)."""

from __future__ import annotations

from typing import Any

from bot.process.state import State
from bot.slack.blocks.tool_output import OutputButton
from bot.slack.inbound.listeners.tool_output import look_at, per_person, requester_of
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.tool_outputs import ToolOutputs
from permissions import Person, Policy, RoleConfig, RoleResolver
from tools import tool
from tools.registry import ToolRegistry

ROLES = {"everyone": RoleConfig(default=True, tools=["*"])}
THREAD = ThreadKey("T1", "C1", "100.1")
BUTTON = OutputButton("T1", "C1", "100.1", "1-0")


@tool
def get_time() -> str:
    """The time."""
    return "10:00"


def turn() -> list[dict[str, Any]]:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "files_read", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
    ]
    return [
        {"role": "user", "content": "my plan?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "a", "content": "alice's plan"},
        {"role": "tool", "tool_call_id": "b", "content": "10:00"},
    ]


async def test_a_per_person_output_is_shown_to_the_requester_alone(state: State) -> None:
    outputs = ToolOutputs(state.threads.history, state.threads.records)
    await state.threads.history.append(THREAD, turn(), user="U_ALICE", turn=BUTTON.turn)
    registry = ToolRegistry()
    registry.add(get_time)
    policy = Policy(ROLES, RoleResolver(ROLES))

    assert await requester_of(outputs, BUTTON) == "U_ALICE"
    assert await requester_of(outputs, OutputButton("T1", "C1", "100.1", "9-9")) is None

    async def look(user: str, requester: str | None) -> tuple[list[str], list[str]]:
        found = await look_at(
            outputs,
            policy,
            BUTTON,
            Person("T1", user, "C1", user_team="T1"),
            clicked_in="C1",
            per_person=lambda name: per_person(registry, name),
            requester=requester,
        )
        return found.shown, found.refused

    # files_read is no shared tool: it ran as alice, with her own account.
    assert await look("U_ALICE", "U_ALICE") == (["files_read", "get_time"], [])
    assert await look("U_BOB", "U_ALICE") == (["get_time"], ["files_read"])
    assert await look("U_ALICE", None) == (["get_time"], ["files_read"])  # not known: nobody
