"""One policy, asked twice: which tools a person sees, and whether they may run one now.

Roles (from the resolver), minus tools an admin switched off, minus channel limits. The same
answer is given when the model is offered tools and when a call arrives, so nothing in the
arguments or the conversation can raise a role, and a tool switched off mid-turn stops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from permissions.config import RoleConfig
from permissions.lookups import Cached
from permissions.resolver import RoleResolver
from permissions.rules import is_admin, tool_allowed
from permissions.sources import HeldRole, role_names
from tools.definition import Tool
from tools.errors import ToolUnavailable
from tools.toolset import Toolset


class Switches(Protocol):
    async def disabled(self) -> set[str]: ...


class Reads(Protocol):
    """One question's reads at once: what the resolver's cache holds for the person
    (``Cache.read``) and the tools switched off (``Switches.disabled``), one round trip."""

    async def read(self, team: str, user: str, external: bool) -> tuple[Cached, set[str]]: ...


@dataclass(frozen=True)
class Person:
    team: str  # the bot's workspace, where this happens
    user: str
    channel: str | None  # None: anywhere (Home tab, console)
    # The person's own workspace as the event, click or command names it; "" when it names
    # none, and then they are an outside person: it is never assumed to be this one.
    user_team: str = ""

    @property
    def external(self) -> bool:
        """An outside person: the surface names another workspace as theirs (a Slack
        Connect channel) or none at all. Not external is not yet inside: the resolver asks
        the directory (users.info) too (permissions/resolver.py)."""
        return self.user_team != self.team


class Policy:
    def __init__(
        self,
        roles: Mapping[str, RoleConfig],
        resolver: RoleResolver,
        switches: Switches | None = None,
        reads: Reads | None = None,
    ) -> None:
        self.roles = roles
        self.resolver = resolver
        self.switches = switches
        self.reads = reads  # the switches and the resolver's cache, read together

    async def held(self, person: Person) -> list[HeldRole]:
        return await self.resolver.resolve(person.team, person.user, external=person.external)

    async def is_admin(self, person: Person) -> bool:
        return is_admin(role_names(await self.held(person)), self.roles)

    async def disabled(self) -> set[str]:
        return await self.switches.disabled() if self.switches is not None else set()

    def by_roles(self, held: Sequence[str], tool: str, channel: str | None) -> bool:
        if not self.roles:
            return True  # no roles configured: every tool for everyone
        return tool_allowed(held, self.roles, tool, channel)

    async def _ask(
        self, person: Person, held: Sequence[str] | None
    ) -> tuple[Sequence[str], set[str]]:
        """The roles of ``person`` (``held``, when fixed) and the tools switched off, both
        read afresh for this question."""
        if held is not None:
            return held, await self.disabled()
        if self.reads is None:
            return role_names(await self.held(person)), await self.disabled()
        cached, off = await self.reads.read(person.team, person.user, person.external)
        found = await self.resolver.resolve(
            person.team, person.user, external=person.external, cached=cached
        )
        return role_names(found), off

    async def check(
        self, person: Person, tool: str, held: Sequence[str] | None = None
    ) -> str | None:
        """None when ``person`` may run ``tool`` here and now; else the reason they may not."""
        names, off = await self._ask(person, held)
        if tool in off:
            return "An admin has switched it off."
        if not self.by_roles(names, tool, person.channel):
            where = " in this channel" if person.channel else ""
            return f"Your roles ({', '.join(names) or 'none'}) do not allow it{where}."
        return None

    async def visible(
        self, person: Person, tools: Sequence[Tool], held: Sequence[str] | None = None
    ) -> list[Tool]:
        names, off = await self._ask(person, held)
        return [
            t for t in tools if t.name not in off and self.by_roles(names, t.name, person.channel)
        ]

    def toolset(self, inner: Toolset, person: Person, held: Sequence[str] | None = None) -> Toolset:
        """``inner`` as ``person`` may use it. ``held`` fixes the roles (the console's --role)."""
        return PolicyToolset(self, inner, person, held)


class PolicyToolset:
    def __init__(
        self, policy: Policy, inner: Toolset, person: Person, held: Sequence[str] | None
    ) -> None:
        self.policy = policy
        self.inner = inner
        self.person = person
        self.held = held

    async def list_tools(self) -> Sequence[Tool]:
        return await self.policy.visible(self.person, await self.inner.list_tools(), self.held)

    async def get_tool(self, name: str) -> Tool:
        tool = await self.inner.get_tool(name)  # an unknown name is refused as unknown
        reason = await self.policy.check(self.person, name, self.held)
        if reason is not None:
            raise ToolUnavailable.forbidden(name, reason)
        return tool
