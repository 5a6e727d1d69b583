"""Roles from the four sources, the default role, caching, and Slack failing."""

from __future__ import annotations

from dataclasses import dataclass

from permissions import RoleConfig, RoleResolver
from permissions.sources import HeldRole

ROLES = {
    "admin": RoleConfig(
        admin=True, members=["U0ADMIN", "S0OPS"], workspace_admins=True, tools=["*"]
    ),
    "warehouse_staff": RoleConfig(members=["S0WAREHOUSE"], tools=["search_*"]),
    "member": RoleConfig(default=True, tools=["get_time"]),
}


class Directory:
    def __init__(self) -> None:
        self.groups = {"S0OPS": {"U0OPS"}, "S0WAREHOUSE": {"U0CLERK", "U0OPS"}}
        self.admins = {"U0OWNER"}
        self.down = False
        self.asked = 0

    async def is_workspace_admin(self, team: str, user: str) -> bool:
        self.asked += 1
        if self.down:
            raise ConnectionError("slack is down")
        return user in self.admins

    async def group_members(self, team: str, group: str) -> set[str]:
        self.asked += 1
        if self.down:
            raise ConnectionError("slack is down")
        return self.groups.get(group, set())


@dataclass
class Grant:
    role: str
    by: str


class Grants:
    def __init__(self) -> None:
        self.by_user: dict[str, list[Grant]] = {}

    async def of(self, team: str, user: str) -> list[Grant]:
        return self.by_user.get(user, [])


class Cache:
    def __init__(self) -> None:
        self.data: dict[str, tuple[str, int]] = {}

    async def get(self, key: str) -> str | None:
        return self.data[key][0] if key in self.data else None

    async def set(self, key: str, value: str, ttl_s: int) -> None:
        self.data[key] = (value, ttl_s)

    async def delete(self, key: str) -> None:
        self.data.pop(key, None)


async def test_each_source() -> None:
    directory, grants = Directory(), Grants()
    grants.by_user["U0GRANTED"] = [
        Grant("warehouse_staff", "U0ADMIN"),
        Grant("retired_role", "U0ADMIN"),
    ]
    resolver = RoleResolver(ROLES, directory=directory, grants=grants)
    assert await resolver.resolve("T", "U0ADMIN") == [HeldRole("admin", "listed in the config")]
    assert await resolver.resolve("T", "U0OPS") == [
        HeldRole("admin", "member of user group S0OPS"),
        HeldRole("warehouse_staff", "member of user group S0WAREHOUSE"),
    ]
    assert await resolver.resolve("T", "U0OWNER") == [
        HeldRole("admin", "Slack workspace admin or owner")
    ]
    # A grant of a role no longer configured is ignored, never an error.
    assert await resolver.resolve("T", "U0GRANTED") == [
        HeldRole("warehouse_staff", "granted by <@U0ADMIN>")
    ]
    assert await resolver.resolve("T", "U0NOBODY") == [HeldRole("member", "default role")]


async def test_answers_are_cached_so_a_turn_asks_slack_nothing() -> None:
    directory, cache = Directory(), Cache()
    resolver = RoleResolver(ROLES, directory=directory, cache=cache)
    first = await resolver.resolve("T", "U0CLERK")
    asked = directory.asked
    assert await resolver.resolve("T", "U0CLERK") == first
    assert directory.asked == asked
    assert cache.data["roles:T:U0CLERK"][1] == 300
    await resolver.forget("T", "U0CLERK")
    await resolver.resolve("T", "U0CLERK")
    assert directory.asked > asked


async def test_slack_failing_never_gives_more_rights() -> None:
    directory, cache = Directory(), Cache()
    directory.down = True
    resolver = RoleResolver(ROLES, directory=directory, cache=cache)
    # A workspace owner whose status cannot be checked gets the default role only...
    assert await resolver.resolve("T", "U0OWNER") == [HeldRole("member", "default role")]
    # ...and the degraded answer is kept only briefly.
    assert cache.data["roles:T:U0OWNER"][1] == 30
    # Config user IDs need no Slack call and still count.
    assert await resolver.resolve("T", "U0ADMIN") == [HeldRole("admin", "listed in the config")]


async def test_people_from_another_workspace_hold_the_default_role_unless_named() -> None:
    """Slack Connect: this workspace's user groups and admin status are not theirs, and
    their own workspace's admin status gives nothing here."""
    directory, grants, cache = Directory(), Grants(), Cache()
    directory.groups["S0OPS"].add("U0GUEST")
    directory.admins.add("U0GUEST")  # an owner of their own workspace
    resolver = RoleResolver(ROLES, directory=directory, grants=grants, cache=cache)
    assert await resolver.resolve("T", "U0GUEST", external=True) == [
        HeldRole("member", "default role")
    ]
    assert directory.asked == 0  # nothing asked of Slack about them
    # Named in the config: that counts, as does an admin's grant.
    assert await resolver.resolve("T", "U0ADMIN", external=True) == [
        HeldRole("admin", "listed in the config")
    ]
    grants.by_user["U0PARTNER"] = [Grant("warehouse_staff", "U0ADMIN")]
    [held] = await resolver.resolve("T", "U0PARTNER", external=True)
    assert held.role == "warehouse_staff"
    # The same person seen as a member of this workspace is resolved (and cached) apart.
    assert [h.role for h in await resolver.resolve("T", "U0GUEST")] == ["admin", "admin"]
    await resolver.forget("T", "U0GUEST")
    assert not [key for key in cache.data if "U0GUEST" in key]
