"""Each person's context is their own: what of a shared thread's history the model may show
to the person whose turn it is (the rule is pure; the tools they may use come from the same
policy toolset their calls go through)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from bot.agent.messages import repair
from permissions import Person, Policy, RoleConfig, RoleResolver
from permissions.withholding import (
    arguments_note,
    called_tools,
    carried_note,
    note,
    requester_scope,
    usable_tools,
    withheld,
)
from tools import StaticToolset, tool
from tools.definition import Tool

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


def test_a_restricted_call_is_withheld_with_its_round() -> None:
    thread = [payroll_turn("U0ADMIN"), member_turn()]
    [admins, alices] = withheld(thread, "U0ALICE", usable={"get_time"})
    assert admins[2] == {
        "role": "tool",
        "tool_call_id": "p1",
        "content": "[result of search_payroll withheld: not available to you]",
    }
    assert note("search_payroll") == admins[2]["content"]
    assert "7,000" not in str(admins)  # neither the result
    assert not any("Bob" in c["function"]["arguments"] for c in admins[1]["tool_calls"])
    payroll, time = admins[1]["tool_calls"]
    assert payroll["function"] == {
        "name": "search_payroll",
        "arguments": arguments_note("search_payroll", restricted=True),
    }
    assert json.loads(payroll["function"]["arguments"]) == {
        "withheld": "arguments of search_payroll: not available to you"
    }
    # A tool she may use, in the same round: it ran beside the withheld call, so its
    # arguments and result are withheld too (they may carry it).
    assert time["function"]["arguments"] == arguments_note("get_time", restricted=False)
    assert admins[3] == {**result("t1", ""), "content": carried_note("get_time")}
    assert carried_note("get_time") == (
        "[result of get_time withheld: it may carry what is not available to you]"
    )
    assert alices == member_turn().messages  # her own turn: whole


def test_the_round_is_withheld_whole_whatever_the_order_of_its_calls() -> None:
    first = payroll_turn("U0ADMIN")
    calls_of = first.messages[1]["tool_calls"]
    reordered = Asked(
        [
            *first.messages[:1],
            {**first.messages[1], "tool_calls": calls_of[::-1]},
            *first.messages[2:],
        ],
        "U0ADMIN",
    )
    [shown] = withheld([reordered], "U0ALICE", usable={"get_time"})
    assert [c["function"]["arguments"] for c in shown[1]["tool_calls"]] == [
        arguments_note("get_time", restricted=False),
        arguments_note("search_payroll", restricted=True),
    ]
    assert [m["content"] for m in shown[2:4]] == [note("search_payroll"), carried_note("get_time")]


def round_of(call_id: str, name: str, arguments: str, output: str) -> list[Message]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [call(call_id, name, arguments)]},
        result(call_id, output),
    ]


def test_every_later_round_and_later_turn_is_withheld_earlier_ones_stay() -> None:
    """From the round with the withheld call on, the model that wrote the arguments and saw
    the results may have had the withheld data: in that turn and in later turns of others."""
    admin = Asked(
        [
            {"role": "user", "content": "<@U0ADMIN>: when is Bob paid, and how much?"},
            *round_of("t0", "get_time", '{"zone": "UTC"}', "10:00"),  # before: stays
            *round_of("p1", "search_payroll", '{"name": "Bob"}', "Bob: 7,000 a month"),
            *round_of("t1", "get_time", '{"note": "Bob earns 7,000"}', "10:01, Bob earns 7,000"),
            {"role": "assistant", "content": "Bob is paid on the 28th."},
        ],
        "U0ADMIN",
    )
    later = Asked(
        [
            {"role": "user", "content": "<@U0ADMIN>: and the time now?"},
            *round_of("t2", "get_time", '{"note": "7,000"}', "10:02 (7,000)"),
            {"role": "assistant", "content": "10:02."},
        ],
        "U0ADMIN",
    )
    first, own, second = withheld([admin, member_turn(), later], "U0ALICE", usable={"get_time"})
    assert first[1:3] == admin.messages[1:3]  # the round before the withheld one: whole
    assert "7,000" not in json.dumps([first, second])
    assert [m["content"] for m in first if m["role"] == "tool"] == [
        "10:00",
        note("search_payroll"),
        carried_note("get_time"),
    ]
    assert second[2]["content"] == carried_note("get_time")
    assert second[1]["tool_calls"][0]["function"]["arguments"] == arguments_note(
        "get_time", restricted=False
    )
    assert own == member_turn().messages  # her own turn, between them: whole
    # People's words and the bot's answers stay.
    assert [m["content"] for m in first + second if m["role"] == "user"] == [
        "<@U0ADMIN>: when is Bob paid, and how much?",
        "<@U0ADMIN>: and the time now?",
    ]
    assert first[-1] == admin.messages[-1] and second[-1] == later.messages[-1]
    # Someone who may use both tools sees it all.
    assert withheld([admin, later], "U0OTHERADMIN", usable={"get_time", "search_payroll"}) == [
        list(admin.messages),
        list(later.messages),
    ]


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
                # The text stays (the thread showed it); only the calls' arguments go.
                assert {**new, "tool_calls": None} == {**old, "tool_calls": None}
                assert [c["function"]["name"] for c in new.get("tool_calls") or ()] == [
                    c["function"]["name"] for c in old.get("tool_calls") or ()
                ]
    assert thread == original  # the input is not changed
    assert contents(shown).count("[result of get_time withheld: not available to you]") == 1


def test_turns_stored_before_the_requester_was_kept_are_nobodys_own() -> None:
    old = payroll_turn(None)
    for requester in ("U0ADMIN", "U0ALICE"):
        [shown] = withheld([old], requester, usable={"get_time"})
        assert shown[2]["content"] == note("search_payroll")
        assert shown[3]["content"] == carried_note("get_time")
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
    assert second[2]["content"] == carried_note("get_time")  # a later turn: may carry it
    assert third[1]["content"] == note("an unknown tool")
    # Alone, the later turn is named by its own call: get_time, which she may use.
    [alone] = withheld([again], "U0ALICE", usable={"get_time"})
    assert alone == again.messages
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
    assert "10:05" in contents(shown)  # her own turn's result


async def test_per_person_results_are_never_shared() -> None:
    async def read_private(arguments: dict[str, Any]) -> str:
        return "alice's plan"

    mine = Tool(
        name="search_payroll",  # allowed to everyone by roles, and run as each person
        description="Reads your own files.",
        parameters={"type": "object", "properties": {}},
        invoke=read_private,
        source="mcp files",
        per_person=True,
    )
    policy = Policy(ROLES, RoleResolver(ROLES), Switches())
    tools = policy.toolset(StaticToolset([mine, get_time]), Person("T", "U0ADMIN", "C0CHAN"))

    assert await usable_tools(tools, ["search_payroll", "get_time"]) == {"get_time"}
    # Another admin's turn that called it: withheld from this admin, who may use the tool.
    shown = await requester_scope("U0ADMIN2", tools)([payroll_turn("U0ADMIN")])
    assert "Bob: 7,000 a month" not in contents(shown)
    assert note("search_payroll") in contents(shown)
    # The person's own turn stays whole.
    own = await requester_scope("U0ADMIN", tools)([payroll_turn("U0ADMIN")])
    assert "Bob: 7,000 a month" in contents(own)
