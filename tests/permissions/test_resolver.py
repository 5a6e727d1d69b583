"""Roles from the four sources, the default role, caching, and Slack failing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from permissions import RoleConfig, RoleResolver
from permissions.lookups import Cached, Standing
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
        self.elsewhere: set[str] = set()  # people users.info places in another workspace
        self.down = False
        self.asked = 0

    async def standing(self, team: str, user: str) -> Standing:
        self.asked += 1
        if self.down:
            raise ConnectionError("slack is down")
        # Slack answers for the person's own workspace: an owner elsewhere is flagged so.
        member = user not in self.elsewhere
        return Standing(member=member, admin=member and user in self.admins)

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
    """The Cache protocol in memory: a generation per person, moved on by forget()."""

    def __init__(self) -> None:
        self.data: dict[str, tuple[str, int]] = {}
        self.generations: dict[str, int] = {}

    @staticmethod
    def key(team: str, user: str, external: bool) -> str:
        return f"roles:{team}:{user}" + (":external" if external else "")

    async def read(self, team: str, user: str, external: bool) -> Cached:
        found = self.data.get(self.key(team, user, external))
        return Cached(found[0] if found else None, str(self.generations.get(user, 0)))

    async def write(
        self, team: str, user: str, external: bool, value: str, ttl_s: int, generation: str
    ) -> bool:
        if str(self.generations.get(user, 0)) != generation:
            return False
        self.data[self.key(team, user, external)] = (value, ttl_s)
        return True

    async def forget(self, team: str, user: str) -> None:
        self.generations[user] = self.generations.get(user, 0) + 1
        self.data.pop(self.key(team, user, False), None)
        self.data.pop(self.key(team, user, True), None)


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


async def test_someone_slack_places_in_another_workspace_is_an_outside_person() -> None:
    """Shared channels fail closed: the event named no workspace (or this one), but
    users.info places the person elsewhere; this workspace's groups and admin status are not
    theirs, their own workspace's admin status gives nothing here."""
    directory, grants, cache = Directory(), Grants(), Cache()
    directory.groups["S0OPS"].add("U0GUEST")
    directory.admins.add("U0GUEST")
    directory.elsewhere.update({"U0GUEST", "U0ADMIN", "U0PARTNER"})
    resolver = RoleResolver(ROLES, directory=directory, grants=grants, cache=cache)
    assert await resolver.resolve("T", "U0GUEST") == [HeldRole("member", "default role")]
    assert directory.asked == 1  # who they are; their groups never read
    assert cache.data["roles:T:U0GUEST"][1] == 300  # a full answer: Slack was asked
    # The config's user IDs and the grants still count.
    assert await resolver.resolve("T", "U0ADMIN") == [HeldRole("admin", "listed in the config")]
    grants.by_user["U0PARTNER"] = [Grant("warehouse_staff", "U0ADMIN")]
    assert [h.role for h in await resolver.resolve("T", "U0PARTNER")] == ["warehouse_staff"]


async def test_someone_slack_cannot_place_is_an_outside_person_briefly() -> None:
    directory, cache = Directory(), Cache()
    directory.down = True
    resolver = RoleResolver(ROLES, directory=directory, cache=cache)
    # A member of the ops group is not counted as one while Slack cannot say who they are.
    assert await resolver.resolve("T", "U0OPS") == [HeldRole("member", "default role")]
    assert cache.data["roles:T:U0OPS"][1] == 30
    directory.down = False
    await resolver.forget("T", "U0OPS")
    assert [h.role for h in await resolver.resolve("T", "U0OPS")] == ["admin", "warehouse_staff"]


async def test_without_slack_based_roles_slack_is_never_asked() -> None:
    roles = {
        "admin": RoleConfig(admin=True, members=["U0ADMIN"], tools=["*"]),
        "member": RoleConfig(default=True, tools=["get_time"]),
    }
    directory = Directory()
    resolver = RoleResolver(roles, directory=directory)
    assert [h.role for h in await resolver.resolve("T", "U0ADMIN")] == ["admin"]
    assert [h.role for h in await resolver.resolve("T", "U0OWNER")] == ["member"]
    assert directory.asked == 0


class HeldGrants(Grants):
    """Grants whose read for one person is held after it has read: the lookup has the old
    grants in hand while a revoke runs."""

    def __init__(self, user: str) -> None:
        super().__init__()
        self.user = user
        self.read = asyncio.Event()
        self.release = asyncio.Event()

    async def of(self, team: str, user: str) -> list[Grant]:
        found = list(await super().of(team, user))
        if user == self.user:
            self.read.set()
            await self.release.wait()
        return found


async def test_a_lookup_that_read_the_grants_before_a_revoke_never_caches_its_answer() -> None:
    grants, cache = HeldGrants("U0ALICE"), Cache()
    grants.by_user["U0ALICE"] = [Grant("warehouse_staff", "U0ADMIN")]
    resolver = RoleResolver(ROLES, directory=Directory(), grants=grants, cache=cache)
    lookup = asyncio.create_task(resolver.resolve("T", "U0ALICE"))
    await grants.read.wait()
    grants.by_user["U0ALICE"] = []  # the revoke, to completion
    await resolver.forget("T", "U0ALICE")
    grants.release.set()
    assert [h.role for h in await lookup] == ["warehouse_staff"]  # it started before
    assert "roles:T:U0ALICE" not in cache.data  # ...and wrote nothing back
    grants.user = ""  # the next lookup is not held
    assert await resolver.resolve("T", "U0ALICE") == [HeldRole("member", "default role")]
