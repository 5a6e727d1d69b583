"""One policy for every surface (Slack's turns, ``slack-agent chat``, ``/agent``): which tools
a person sees, whether they may run one now, whether a call of theirs needs a person's
approval, and whether they may decide one.

Roles (from the resolver), minus tools an admin switched off, minus channel limits
(``rules.tool_allowed``). The same answer is given when the model is offered tools and when
a call arrives, so nothing in the arguments or the conversation can raise a role, and a tool
switched off mid-turn stops. Approval: ``permissions/approval.py``, asked here with the
person's roles (:meth:`Policy.needs_approval`, :meth:`Policy.may_decide`); :meth:`Policy.guarded`
is the toolset a surface runs calls through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from permissions import approval as rule
from permissions.approval import ApprovalConfig
from permissions.config import RoleConfig
from permissions.lookups import Cached
from permissions.resolver import RoleResolver
from permissions.rules import is_admin, tool_allowed
from permissions.sources import HeldRole, role_names
from tools.approval import ApprovalToolset, Approver
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
        approval: ApprovalConfig | None = None,
    ) -> None:
        self.roles = roles
        self.resolver = resolver
        self.switches = switches
        self.reads = reads  # the switches and the resolver's cache, read together
        self.approval = approval or ApprovalConfig()

    async def held(self, person: Person) -> list[HeldRole]:
        return await self.resolver.resolve(person.team, person.user, external=person.external)

    async def is_admin(self, person: Person) -> bool:
        return is_admin(role_names(await self.held(person)), self.roles)

    async def disabled(self) -> set[str]:
        return await self.switches.disabled() if self.switches is not None else set()

    def by_roles(self, held: Sequence[str], tool: str, channel: str | None) -> bool:
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

    async def needs_approval(
        self, person: Person, tool: Tool, held: Sequence[str] | None = None
    ) -> bool:
        """Whether ``person``'s call of ``tool`` waits for a person's yes
        (``permissions/approval.needs_approval``). Their roles are read only when the tool may
        need approval at all."""
        if not rule.may_need_approval(tool, self.approval):
            return False  # whoever asks: no roles to read
        names = held if held is not None else role_names(await self.held(person))
        return rule.needs_approval(tool, self.approval, self.roles, names)

    async def may_decide(
        self, person: Person, *, is_requester: bool, held: Sequence[str] | None = None
    ) -> bool:
        """Whether ``person`` may approve or deny a request (``approval.approvers``)."""
        names = held if held is not None else role_names(await self.held(person))
        return rule.may_decide(
            self.approval,
            is_requester=is_requester,
            is_admin=is_admin(names, self.roles),
            held=names,
        )

    def guarded(
        self,
        inner: Toolset,
        person: Person,
        approver: Approver | None,
        held: Sequence[str] | None = None,
    ) -> Toolset:
        """``inner`` as ``person`` may use it, each call that needs a person's approval
        checked against its schema and then put to ``approver`` (None: nobody can be asked,
        and such calls are refused). Every surface runs its calls through this."""

        async def needs(tool: Tool) -> bool:
            return await self.needs_approval(person, tool, held)

        return ApprovalToolset(self.toolset(inner, person, held), approver, needs)


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
