"""What the slash command shows: a person's tools (a server that signs each person in as
such, with what is offered until they connect), roles and connections to MCP servers, and for
admins every tool, the roles and grants, the audit log, usage, feedback and who is connected
to what (read only; never a token; replies within Slack's limits)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from bot.admin.context import AdminStores, Caller, Permalink
from bot.admin.parsing import user_id
from bot.budget.budgets import Standing
from bot.budget.wording import amount, limit_words, reset
from bot.slack.blocks.limits import limited, shorten
from bot.state.usage import UsageTotals
from permissions.approval import approval_reasons
from permissions.config import RoleConfig
from permissions.policy import Person, Policy
from permissions.rules import who_may_use
from tools.registry import ToolRegistry

if TYPE_CHECKING:
    from tools.mcp.oauth.personal import PersonalServer
    from tools.mcp.oauth.tokens import TokenSnapshot

FEEDBACK_DAYS = 7
FEEDBACK_NEGATIVE = 10
AUDIT_DEFAULT, AUDIT_MAX = 20, 100


class AdminReports:
    def __init__(
        self,
        command: str,
        policy: Policy,
        registry: ToolRegistry,
        roles: dict[str, RoleConfig],
        state: AdminStores,
        permalink: Permalink,
        personal: Mapping[str, PersonalServer] | None = None,
    ) -> None:
        self.command = command
        self.policy = policy
        self.registry = registry
        self.roles = roles
        self.state = state
        self.permalink = permalink
        self.personal = personal or {}  # the MCP servers that sign each person in

    # --- everyone ------------------------------------------------------------------------

    async def tools(self, caller: Caller, args: list[str]) -> str:
        if args:
            hint = " Admins: try `tools all`." if args[0].lower().startswith("al") else ""
            return f"`{self.command} tools` takes no arguments.{hint}"
        visible = await self.policy.visible(caller.person, await self.registry.list_tools())
        rows = [f"• `{t.name}` — {shorten(_first_line(t.description), 150)}" for t in visible]
        signing = await self._signs_in(caller)
        if not rows and not signing:
            return "No tools are available to you here."
        lines = ["*Your tools here:*", *rows] if rows else []
        if signing:
            lines += ["*Sign in to use:*", *signing]
        return "\n".join(limited(lines))

    async def _signs_in(self, caller: Caller) -> list[str]:
        """Each server that signs each person in, with what it offers until they connect
        (their own tools once connected are not listed here: no session is opened)."""
        rows = []
        for name, server in self.personal.items():
            offered = await self.policy.visible(caller.person, await server.listed_for_nobody())
            shown = ", ".join(f"`{t.name}`" for t in offered) or "nothing yet"
            rows.append(
                f"• *{name}* signs each person in: connect with `{self.command} connect {name}`"
                f" — offered until then: {shown}"
            )
        return rows

    async def whoami(self, caller: Caller, args: list[str]) -> str:
        held = await self.policy.held(caller.person)
        if not self.roles:
            roles_text = "No roles are configured: everyone may use every tool."
        elif held:
            roles_text = "\n".join(f"• *{h.role}* — {h.source}" for h in held)
        else:
            roles_text = "You hold no role."
        visible = await self.policy.visible(caller.person, await self.registry.list_tools())
        names = ", ".join(limited([f"`{t.name}`" for t in visible], 2_000, ", ")) or "none"
        return f"*Your roles:*\n{roles_text}\n*Your tools here:* {names}"

    async def connections(self, caller: Caller, args: list[str]) -> str:
        """The person's own connections: where, what scope, since when, and whether they
        renew by themselves."""
        if args:
            hint = " Admins: try `connections all`." if args[0].lower().startswith("al") else ""
            return f"`{self.command} connections` takes no arguments.{hint}"
        oauth = self.state.oauth
        if oauth is None:
            return "No MCP server here signs people in."
        from bot.oauth.records import KeyNotHeld
        from tools.mcp.oauth.account import Account

        account = Account(caller.team, caller.user)
        found = await oauth.connections.connections(account)
        if not found:
            servers = ", ".join(f"`{name}`" for name in sorted(oauth.servers))
            return (
                f"You have no connections. `{self.command} connect <server>` connects one "
                f"({servers})."
            )
        rows = []
        for connection in found:
            try:
                held = await oauth.tokens_for(account, connection.server).current()
            except KeyNotHeld:
                how = "unreadable with this replica's key: ask an admin"
            else:
                how = "unreadable: connect again" if held is None else _renewal(held.snapshot)
            scope = f", scope `{connection.scope}`" if connection.scope else ""
            rows.append(
                f"• `{connection.server}` — {host(connection.issuer)}{scope}, since "
                f"{when(connection.since)}, {how}"
            )
        return "*Your connections:*\n" + "\n".join(limited(rows))

    # --- admins --------------------------------------------------------------------------

    async def connections_all(self, caller: Caller, args: list[str]) -> str:
        """Who is connected to which server, at which issuer, since when (never a token)."""
        if args:
            return f"`{self.command} connections all` takes no arguments."
        oauth = self.state.oauth
        if oauth is None:
            return "No MCP server here signs people in."
        found = await oauth.connections.team_connections(caller.team)
        if not found:
            return "Nobody is connected to a server."
        rows = [
            f"• <@{c.user}> → `{c.server}` ({host(c.issuer)}, since {when(c.since)})" for c in found
        ]
        return "*Connections:*\n" + "\n".join(limited(rows))

    async def tools_all(self, caller: Caller, args: list[str]) -> str:
        switches = await self.state.switches.all()
        lines = ["*Every tool:*"]
        for tool in await self.registry.list_tools():
            switch = switches.get(tool.name)
            state = "on"
            if switch is not None and not switch.enabled:
                state = f"*off* (by <@{switch.by}>, {when(switch.at)})"
            who = ", ".join(who_may_use(tool.name, self.roles))
            hints = tool.hints.labels()
            said = f" ({', '.join(hints)})" if hints else ""
            asks = approval_reasons(tool, self.policy.approval)
            needs = " — needs approval" if asks else ""
            lines.append(
                f"• `{tool.name}` [{tool.source}]{said} — {state} — roles: {who or 'none'}{needs}"
            )
        return "\n".join([lines[0], *limited(lines[1:])])

    async def list_roles(self, caller: Caller, args: list[str]) -> str:
        if not self.roles:
            return "No roles are configured: everyone may use every tool, and nobody is an admin."
        lines = ["*Roles:*"]
        for name, role in self.roles.items():
            flags = [f for f, on in (("admin", role.admin), ("default", role.default)) if on]
            members = ", ".join(_mention(m) for m in role.members) or "—"
            if role.workspace_admins:
                members += " + workspace admins and owners"
            where = f"; channels {', '.join(role.channels)}" if role.channels else ""
            label = f" ({', '.join(flags)})" if flags else ""
            lines.append(
                f"• *{name}*{label}: tools {', '.join(f'`{p}`' for p in role.tools) or '—'}; "
                f"members {members}{where}"
            )
        grants = await self.state.grants.all(caller.team)
        lines.append("*Grants:*")
        lines += [f"• <@{g.user}> — *{g.role}* (by <@{g.by}>, {when(g.at)})" for g in grants] or [
            "• none"
        ]
        return "\n".join(limited(lines))

    async def audit(self, caller: Caller, args: list[str]) -> str:
        count = AUDIT_DEFAULT
        if args:
            if not args[0].isdigit() or int(args[0]) < 1:
                return f"Usage: `{self.command} audit [n]` with n from 1 to {AUDIT_MAX}"
            count = min(int(args[0]), AUDIT_MAX)
        entries = await self.state.audit.latest(count)
        if not entries:
            return "The audit log is empty."
        lines = [f"*Latest {len(entries)}:*"]
        for e in entries:
            target = f" `{e.target}`" if e.target else ""
            lines.append(
                f"• {when(e.at)} <@{e.actor}> {e.kind} `{e.action}`{target} → "
                f"{shorten(e.outcome, 200)}"
            )
        return "\n".join([lines[0], *limited(lines[1:])])

    async def own_usage(self, caller: Caller) -> str:
        """A person's own: today and 7 days, and their spending limits."""
        return await self._person_usage(caller.person)

    async def usage(self, caller: Caller, args: list[str]) -> str:
        if len(args) > 1:
            return f"Usage: `{self.command} usage [@user]`"
        if args:
            user = user_id(args[0])
            if user is None:
                return f"`{args[0]}` is not a person. Usage: `{self.command} usage [@user]`"
            # Their limits as a person of this workspace would have them (users.info decides).
            person = Person(caller.team, user, None, user_team=caller.team)
            return await self._person_usage(person)
        limits = standing_lines(await self.state.budgets.standing(caller.team), "")
        people = await self.state.usage.report(caller.team, days=7)
        if not people:
            return "\n".join(["Nobody has used the bot in the last 7 days.", *limits])
        people.sort(key=lambda p: p.all_days.prompt_tokens + p.all_days.completion_tokens)
        rows = [
            f"• <@{p.user}> — {_totals(p.last_day)} | {_totals(p.all_days)}"
            for p in reversed(people)
        ]
        return "\n".join(limited([*limits, "*Usage, today | last 7 days:*", *rows]))

    async def _person_usage(self, person: Person) -> str:
        usage = await self.state.usage.person(person.team, person.user, days=7)
        standing = await self.state.budgets.standing(person.team, person)
        lines = [
            f"<@{person.user}>",
            f"• today: {_totals(usage.last_day)}",
            f"• last 7 days: {_totals(usage.all_days)}",
            *standing_lines(
                standing, "No spending limit applies." if self.state.budgets.enabled else ""
            ),
        ]
        return "\n".join(limited(lines))

    async def feedback(self, caller: Caller, args: list[str]) -> str:
        if args:
            return f"`{self.command} feedback` takes no arguments."
        days = await self.state.feedback.per_day(caller.team, FEEDBACK_DAYS)
        if not any(day.up or day.down for day in days):
            return f"No feedback in the last {FEEDBACK_DAYS} days."
        lines = [f"*Feedback, last {FEEDBACK_DAYS} days (good / bad):*"]
        lines += [f"• {day.day}: {day.up} / {day.down}" for day in days if day.up or day.down]
        negative = await self.state.feedback.latest_negative(caller.team, FEEDBACK_NEGATIVE)
        if negative:
            lines.append("*Latest bad ones:*")
            for item in negative:
                tools = f", tools {', '.join(f'`{t}`' for t in item.tools)}" if item.tools else ""
                link = self.permalink(item.channel, item.message_ts, item.thread_ts)
                lines.append(
                    f"• {when(item.at)} <@{item.user}> — {item.model or 'model ?'}{tools} — {link}"
                )
        return "\n".join(limited(lines))


def standing_lines(standing: Standing, none: str) -> list[str]:
    """Each limit with today's spend against it (settled, and held by calls under way)."""
    if not standing.limits:
        return [none] if none else []
    rows = [f"*Spending limits today* (they reset at {reset(standing.day, standing.now)}):"]
    for limit, spent in standing.limits:
        reached = " — *reached*" if spent >= limit.amount else ""
        rows.append(f"• {amount(limit.metric, spent)} used of {limit_words(limit)}{reached}")
    return rows


def _renewal(snapshot: TokenSnapshot) -> str:
    """Whether a connection renews by itself, or must be made again (and when)."""
    if snapshot.token.refresh_token:
        return "renews by itself"
    expires_at = snapshot.expires_at
    if expires_at is not None and expires_at <= time.time():
        return "expired: connect again"
    if expires_at is None:
        return "lasts until the server ends it: then connect again"
    return f"expires {when(expires_at)}: then connect again"


def host(issuer: str) -> str:
    """An issuer's host, as people know the site (pure)."""
    return urlsplit(issuer).netloc or issuer


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _mention(member: str) -> str:
    return f"<!subteam^{member}>" if member.startswith("S") else f"<@{member}>"


def when(at: float) -> str:
    return datetime.fromtimestamp(at or time.time(), UTC).strftime("%Y-%m-%d %H:%M UTC")


def _totals(t: UsageTotals) -> str:
    cost = f", ${t.cost:.4f}" if t.cost else ""
    return f"{t.turns} turns, {t.prompt_tokens:,} + {t.completion_tokens:,} tokens{cost}"
