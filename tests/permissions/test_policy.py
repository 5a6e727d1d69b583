"""The policy asked twice: offered tools and execution-time checks agree."""

from __future__ import annotations

import json

import pytest

from permissions import Person, Policy, RoleConfig, RoleResolver
from permissions.lookups import Cached
from permissions.sources import CONFIG, DEFAULT, HeldRole
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


class Reads:
    """The roles' cache and the switches read together, as bot/state/policy_reads.py does."""

    def __init__(self, cached: Cached, off: set[str]) -> None:
        self.cached = cached
        self.off = off
        self.asked: list[tuple[str, str, bool]] = []

    async def read(self, team: str, user: str, external: bool) -> tuple[Cached, set[str]]:
        self.asked.append((team, user, external))
        return self.cached, set(self.off)


class Cache:
    """The resolver's own cache: never read when the policy read it along with the switches."""

    def __init__(self) -> None:
        self.written: list[tuple[str, str]] = []

    async def read(self, team: str, user: str, external: bool) -> Cached:
        raise AssertionError("read twice")

    async def write(
        self, team: str, user: str, external: bool, value: str, ttl_s: int, generation: str
    ) -> bool:
        self.written.append((value, generation))
        return True

    async def forget(self, team: str, user: str) -> None:
        raise AssertionError("not asked")


async def test_one_read_per_question_of_the_roles_and_the_switches_together() -> None:
    held = json.dumps([HeldRole("clerk", CONFIG).to_json()])
    reads = Reads(Cached(held, "3"), {"get_time"})
    cache = Cache()
    p = Policy(ROLES, RoleResolver(ROLES, cache=cache), Switches(), reads)
    clerk = p.toolset(TOOLS, Person("T", "U0ANYONE", "C0WH1", user_team="T"))
    # The cached answer counts (U0ANYONE is no clerk by the config), the switch too.
    assert [t.name for t in await clerk.list_tools()] == ["search_materials"]
    assert (await clerk.get_tool("search_materials")) is search_materials
    with pytest.raises(ToolUnavailable, match="An admin has switched it off"):
        await clerk.get_tool("get_time")
    assert reads.asked == [("T", "U0ANYONE", False)] * 3  # once a question, nothing kept
    assert cache.written == []

    # Nothing cached: the roles are looked up, and written under the generation read.
    reads.cached, reads.off = Cached(None, "7"), set()
    assert (await clerk.get_tool("get_time")) is get_time  # the default role's
    assert cache.written == [(json.dumps([HeldRole("member", DEFAULT).to_json()]), "7")]


async def test_fixed_roles_read_only_the_switches() -> None:
    reads = Reads(Cached(None, "0"), set())
    switches = Switches()
    switches.off.add("get_time")
    p = Policy(ROLES, RoleResolver(ROLES), switches, reads)
    fixed = p.toolset(TOOLS, Person("T", "U0ANYONE", None), held=["admin"])
    assert [t.name for t in await fixed.list_tools()] == ["search_materials", "create_new_intent"]
    assert reads.asked == []
