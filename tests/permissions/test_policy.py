"""The policy asked twice: offered tools and execution-time checks agree."""

from __future__ import annotations

import pytest

from permissions import Person, Policy, RoleConfig, RoleResolver
from tools import StaticToolset, ToolUnavailable, tool


@tool
def search_materials(query: str) -> str:
    """Search materials."""
    return query


@tool
def create_new_intent(item: str) -> str:
    """Create a purchase intent."""
    return item


@tool
def get_time() -> str:
    """Time."""
    return "now"


ROLES = {
    "admin": RoleConfig(admin=True, members=["U0ADMIN"], tools=["*"]),
    "clerk": RoleConfig(members=["U0CLERK"], tools=["search_*", "get_time"], channels=["C0WH*"]),
    "member": RoleConfig(default=True, tools=["get_time"]),
}
TOOLS = StaticToolset([search_materials, create_new_intent, get_time])


class Switches:
    def __init__(self) -> None:
        self.off: set[str] = set()

    async def disabled(self) -> set[str]:
        return set(self.off)


def policy(switches: Switches | None = None) -> Policy:
    return Policy(ROLES, RoleResolver(ROLES), switches)


async def names(p: Policy, person: Person) -> list[str]:
    return [t.name for t in await p.toolset(TOOLS, person).list_tools()]


async def test_offered_tools_differ_by_role_and_channel() -> None:
    p = policy()
    assert await names(p, Person("T", "U0ADMIN", "C1")) == [
        "search_materials",
        "create_new_intent",
        "get_time",
    ]
    assert await names(p, Person("T", "U0CLERK", "C0WHFLOOR")) == ["search_materials", "get_time"]
    assert await names(p, Person("T", "U0CLERK", "C0RANDOM")) == []
    assert await names(p, Person("T", "U0ANYONE", "C1")) == ["get_time"]
    assert await p.is_admin(Person("T", "U0ADMIN", None))
    assert not await p.is_admin(Person("T", "U0CLERK", None))


async def test_a_call_to_a_tool_not_offered_is_refused() -> None:
    clerk = policy().toolset(TOOLS, Person("T", "U0CLERK", "C0WH1"))
    with pytest.raises(ToolUnavailable) as refused:
        await clerk.get_tool("create_new_intent")
    assert refused.value.kind == "ToolNotAllowed"
    assert "Your roles (clerk) do not allow it in this channel." in str(refused.value)
    with pytest.raises(ToolUnavailable) as unknown:
        await clerk.get_tool("rm_rf")
    assert unknown.value.kind == "UnknownTool"
    assert (await clerk.get_tool("search_materials")) is search_materials


async def test_switches_apply_to_everyone_at_once() -> None:
    switches = Switches()
    admin = policy(switches).toolset(TOOLS, Person("T", "U0ADMIN", "C1"))
    assert (await admin.get_tool("get_time")) is get_time
    switches.off.add("get_time")
    assert "get_time" not in [t.name for t in await admin.list_tools()]
    with pytest.raises(ToolUnavailable, match="An admin has switched it off"):
        await admin.get_tool("get_time")


async def test_fixed_roles_and_no_roles_at_all() -> None:
    fixed = policy().toolset(TOOLS, Person("T", "U0ANYONE", None), held=["admin"])
    assert len(await fixed.list_tools()) == 3
    open_policy = Policy({}, RoleResolver({}))
    assert len(await open_policy.toolset(TOOLS, Person("T", "U", None)).list_tools()) == 3
