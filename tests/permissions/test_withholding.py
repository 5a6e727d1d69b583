"""Each person's context is their own: what of a shared thread's history the model may show
to the person whose turn it is (the rule is pure; the tools they may use come from the same
policy toolset their calls go through)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from bot.agent.messages import repair
from permissions import Person, Policy, RoleConfig, RoleResolver
from permissions.withholding import called_tools, note, requester_scope, usable_tools, withheld
from tools import StaticToolset, tool

Message = dict[str, Any]


@dataclass(frozen=True)
class Asked:
    messages: list[Message]
    user: str | None = None


def call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def result(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def payroll_turn(user: str | None, call_id: str = "p1") -> Asked:
    """An admin's turn: a payroll lookup next to a harmless tool, then the answer."""
    return Asked(
        [
            {"role": "user", "content": "<@U0ADMIN>: what does Bob earn?"},
            {
                "role": "assistant",
                "content": "Looking it up.",
                "tool_calls": [
                    call(call_id, "search_payroll", '{"name": "Bob"}'),
                    call("t1", "get_time"),
                ],
            },
            result(call_id, "Bob: 7,000 a month"),
            result("t1", "10:00"),
            {"role": "assistant", "content": "Bob's pay is in the payroll system."},
        ],
        user,
    )


def member_turn() -> Asked:
    return Asked(
        [
            {"role": "user", "content": "<@U0ALICE>: what time is it?"},
            {"role": "assistant", "content": None, "tool_calls": [call("t2", "get_time")]},
            result("t2", "10:05"),
            {"role": "assistant", "content": "It is 10:05."},
        ],
        "U0ALICE",
    )


def contents(turns: list[list[Message]]) -> list[Any]:
    return [m.get("content") for turn in turns for m in turn]


def test_a_restricted_result_is_withheld_with_a_note() -> None:
    thread = [payroll_turn("U0ADMIN"), member_turn()]
    [admins, alices] = withheld(thread, "U0ALICE", usable={"get_time"})
    assert admins[2] == {
        "role": "tool",
        "tool_call_id": "p1",
        "content": "[result of search_payroll withheld: not available to you]",
    }
    assert note("search_payroll") == admins[2]["content"]
    assert "Bob: 7,000 a month" not in str(admins)
    # A tool she may use: its result stays, in another's turn as in her own.
    assert admins[3] == result("t1", "10:00")
    assert alices == member_turn().messages


def test_the_requesters_own_results_stay() -> None:
    thread = [payroll_turn("U0ADMIN"), member_turn()]
    # Even a tool the admin may no longer use (switched off since): their own result stays.
    [admins, _] = withheld(thread, "U0ADMIN", usable=set())
    assert admins == payroll_turn("U0ADMIN").messages
    # Another admin who may use it sees it too; someone who may not, does not.
    assert withheld(thread, "U0OTHERADMIN", usable={"search_payroll", "get_time"})[0] == admins
    assert "Bob: 7,000" not in str(withheld(thread, "U0OTHER", usable={"get_time"}))


def test_user_and_assistant_text_is_never_touched() -> None:
    thread = [payroll_turn("U0ADMIN"), member_turn()]
    original = copy.deepcopy(thread)
    shown = withheld(thread, "U0ALICE", usable=set())
    for before, after in zip(thread, shown, strict=True):
        for old, new in zip(before.messages, after, strict=True):
            if old["role"] != "tool":
                assert new == old  # the call's arguments too: the thread showed them
    assert thread == original  # the input is not changed
    assert contents(shown).count("[result of get_time withheld: not available to you]") == 1


def test_turns_stored_before_the_requester_was_kept_are_nobodys_own() -> None:
    old = payroll_turn(None)
    for requester in ("U0ADMIN", "U0ALICE"):
        [shown] = withheld([old], requester, usable={"get_time"})
        assert shown[2]["content"] == note("search_payroll")
        assert shown[3]["content"] == "10:00"
    # Nobody asking is nobody's own either.
    assert withheld([Asked(old.messages, "")], "", usable=set())[0][3]["content"] == note(
        "get_time"
    )


def test_every_call_keeps_its_result() -> None:
    thread = [payroll_turn("U0ADMIN"), member_turn(), payroll_turn(None, call_id="p2")]
    shown = [m for turn in withheld(thread, "U0ALICE", usable=set()) for m in turn]
    assert repair(shown) == shown  # nothing missing, nothing out of place
    assert len(shown) == sum(len(t.messages) for t in thread)


def test_a_result_is_named_by_the_call_just_before_it() -> None:
    # Call ids repeat across turns (servers number them from 0 each response).
    again = Asked(
        [
            {"role": "user", "content": "and now?"},
            {"role": "assistant", "content": None, "tool_calls": [call("p1", "get_time")]},
            result("p1", "11:00"),
            {"role": "assistant", "content": "11:00."},
        ],
        "U0ADMIN",
    )
    stray = Asked([{"role": "user", "content": "hi"}, result("zz", "orphan")], "U0ADMIN")
    first, second, third = withheld(
        [payroll_turn("U0ADMIN"), again, stray], "U0ALICE", usable={"get_time"}
    )
    assert first[2]["content"] == note("search_payroll")
    assert second[2]["content"] == "11:00"
    assert third[1]["content"] == note("an unknown tool")
    assert called_tools([payroll_turn("U0ADMIN"), again, member_turn()], "U0ALICE") == {
        "search_payroll",
        "get_time",
    }
    assert called_tools([payroll_turn("U0ADMIN")], "U0ADMIN") == set()


@tool
def search_payroll(name: str) -> str:
    """Payroll."""
    return "confidential"


@tool
def get_time() -> str:
    """Time."""
    return "now"


ROLES = {
    "admin": RoleConfig(admin=True, members=["U0ADMIN"], tools=["*"]),
    "member": RoleConfig(default=True, tools=["get_time", "gone_tool"], channels=["C0CHAN"]),
}


class Switches:
    def __init__(self) -> None:
        self.off: set[str] = set()

    async def disabled(self) -> set[str]:
        return set(self.off)


async def test_usable_tools_are_the_policys_answer_now() -> None:
    switches = Switches()
    policy = Policy(ROLES, RoleResolver(ROLES), switches)
    tools = StaticToolset([search_payroll, get_time])
    names = ["search_payroll", "get_time", "gone_tool", "get_time"]

    def toolset(user: str, channel: str) -> Any:
        return policy.toolset(tools, Person("T", user, channel))

    assert await usable_tools(toolset("U0ADMIN", "C0CHAN"), names) == {"search_payroll", "get_time"}
    # gone_tool: the role names it, but it is no longer registered.
    assert await usable_tools(toolset("U0ALICE", "C0CHAN"), names) == {"get_time"}
    assert await usable_tools(toolset("U0ALICE", "C0OTHER"), names) == set()  # channel limit
    switches.off.add("search_payroll")
    assert await usable_tools(toolset("U0ADMIN", "C0CHAN"), names) == {"get_time"}
    # --role at the console: the fixed role decides.
    fixed = policy.toolset(tools, Person("T", "U0ALICE", None), held=["admin"])
    assert await usable_tools(fixed, ["get_time"]) == {"get_time"}


async def test_requester_scope_asks_each_tool_once() -> None:
    asked: list[str] = []

    class Counting(StaticToolset):
        async def get_tool(self, name: str) -> Any:
            asked.append(name)
            return await super().get_tool(name)

    thread = [payroll_turn("U0ADMIN"), payroll_turn("U0ADMIN", "p2"), member_turn()]
    scope = requester_scope("U0ALICE", Counting([get_time]))
    shown = await scope(thread)
    assert sorted(asked) == ["get_time", "search_payroll"]
    assert contents(shown).count(note("search_payroll")) == 2
    assert "10:00" in contents(shown)
