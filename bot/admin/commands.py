"""Running a subcommand for a person. Replies are Slack mrkdwn, shown only to them.

Everyone: ``help``, ``tools``, ``whoami``. Admins (a role with ``admin: true``) also:
``tools all``, ``enable``/``disable <tool>``, ``grant``/``revoke <@user> <role>``, ``roles``,
``audit [n]``, ``usage [@user]``. Every admin subcommand, and every refused attempt, is
written to the audit log.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.admin.parsing import Invocation, did_you_mean, parse, user_id
from bot.slack.limits import limited, shorten
from bot.state.audit import AuditEntry, AuditLog
from bot.state.feedback import FeedbackLog
from bot.state.grants import RoleGrants
from bot.state.switches import ToolSwitches
from bot.state.usage import UsageCounters, UsageTotals
from permissions.config import RoleConfig
from permissions.policy import Person, Policy
from permissions.rules import roles_allowing
from tools.registry import ToolRegistry

EVERYONE = ("help", "tools", "whoami")
ADMIN = (
    "tools all",
    "enable",
    "disable",
    "grant",
    "revoke",
    "roles",
    "audit",
    "usage",
    "feedback",
)
FEEDBACK_DAYS = 7
FEEDBACK_NEGATIVE = 10
AUDIT_DEFAULT, AUDIT_MAX = 20, 100


@dataclass(frozen=True)
class Caller:
    team: str  # the bot's workspace
    user: str
    channel: str | None
    user_team: str = ""  # the caller's own workspace, when another (Slack Connect)

    @property
    def person(self) -> Person:
        return Person(self.team, self.user, self.channel, user_team=self.user_team)


@dataclass(frozen=True)
class AdminStores:
    """What the admin commands read and write in Redis."""

    switches: ToolSwitches
    grants: RoleGrants
    audit: AuditLog
    usage: UsageCounters
    feedback: FeedbackLog


Permalink = Callable[[str, str, str], str]  # channel, ts, thread ts -> a link to the message


def _plain_link(channel: str, ts: str, thread_ts: str) -> str:
    return f"{channel} {ts}"


class AdminCommands:
    def __init__(
        self,
        command: str,
        policy: Policy,
        registry: ToolRegistry,
        roles: dict[str, RoleConfig],
        state: AdminStores,
        *,
        permalink: Permalink = _plain_link,
    ) -> None:
        self.permalink = permalink
        self.command = command
        self.policy = policy
        self.registry = registry
        self.roles = roles
        self.state = state
        self._handlers: dict[str, Callable[[Caller, list[str]], Awaitable[str]]] = {
            "help": self.help,
            "tools": self.tools,
            "whoami": self.whoami,
            "tools all": self.tools_all,
            "enable": self.enable,
            "disable": self.disable,
            "grant": self.grant,
            "revoke": self.revoke,
            "roles": self.list_roles,
            "audit": self.audit,
            "usage": self.usage,
            "feedback": self.feedback,
        }

    async def run(self, caller: Caller, text: str) -> str:
        invocation = parse(text)
        handler = self._handlers.get(invocation.name)
        if handler is None:
            hint = did_you_mean(invocation.name, [*EVERYONE, *ADMIN], f"`{self.command} {{}}`")
            return (
                f"I don't know `{invocation.name}`.{hint} `{self.command} help` lists the commands."
            )
        if invocation.name in ADMIN:
            if not await self.policy.is_admin(caller.person):
                await self._audit(caller, invocation, outcome="refused")
                return (
                    f"Sorry, `{self.command} {invocation.name}` is only for admins. "
                    f"`{self.command} help` shows what you can use."
                )
            reply = await handler(caller, invocation.args)
            await self._audit(caller, invocation)
            return reply
        return await handler(caller, invocation.args)

    async def _audit(self, caller: Caller, invocation: Invocation, outcome: str = "ok") -> None:
        await self.state.audit.add(
            AuditEntry(
                kind="admin",
                actor=caller.user,
                action=invocation.name,
                target=" ".join(invocation.args),
                outcome=outcome,
                detail={"channel": caller.channel or "", "team": caller.team},
            )
        )

    # --- everyone ------------------------------------------------------------------------

    async def help(self, caller: Caller, args: list[str]) -> str:
        c = self.command
        lines = [
            f"*{c}* — every reply is shown only to you.",
            f"• `{c} tools` — the tools you may use here",
            f"• `{c} whoami` — your roles, where each comes from, and your tools",
        ]
        if await self.policy.is_admin(caller.person):
            lines += [
                "*Admin:*",
                f"• `{c} tools all` — every tool, its source, on or off, and who may use it",
                f"• `{c} enable <tool>` / `{c} disable <tool>` — for everyone, at once",
                f"• `{c} grant <@user> <role>` / `{c} revoke <@user> <role>`",
                f"• `{c} roles` — the roles and the grants",
                f"• `{c} audit [n]` — the latest tool runs and admin actions",
                f"• `{c} usage [@user]` — tokens and cost today and over 7 days",
                f"• `{c} feedback` — answers rated per day, and the latest bad ones",
            ]
        return "\n".join(lines)

    async def tools(self, caller: Caller, args: list[str]) -> str:
        if args:
            hint = " Admins: try `tools all`." if args[0].lower().startswith("al") else ""
            return f"`{self.command} tools` takes no arguments.{hint}"
        visible = await self.policy.visible(caller.person, await self.registry.list_tools())
        if not visible:
            return "No tools are available to you here."
        rows = [f"• `{t.name}` — {shorten(_first_line(t.description), 150)}" for t in visible]
        return "*Your tools here:*\n" + "\n".join(limited(rows))

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

    # --- admins --------------------------------------------------------------------------

    async def tools_all(self, caller: Caller, args: list[str]) -> str:
        switches = await self.state.switches.all()
        lines = ["*Every tool:*"]
        for tool in await self.registry.list_tools():
            switch = switches.get(tool.name)
            state = "on"
            if switch is not None and not switch.enabled:
                state = f"*off* (by <@{switch.by}>, {_when(switch.at)})"
            who = ", ".join(roles_allowing(tool.name, self.roles)) if self.roles else "everyone"
            hints = tool.hints.labels()
            said = f" ({', '.join(hints)})" if hints else ""
            lines.append(
                f"• `{tool.name}` [{tool.source}]{said} — {state} — roles: {who or 'none'}"
            )
        return "\n".join([lines[0], *limited(lines[1:])])

    async def enable(self, caller: Caller, args: list[str]) -> str:
        return await self._switch(caller, args, enabled=True)

    async def disable(self, caller: Caller, args: list[str]) -> str:
        return await self._switch(caller, args, enabled=False)

    async def _switch(self, caller: Caller, args: list[str], enabled: bool) -> str:
        verb = "enable" if enabled else "disable"
        if len(args) != 1:
            return f"Usage: `{self.command} {verb} <tool>`"
        name = args[0].strip("`")
        if name not in self.registry:
            hint = did_you_mean(name, self.registry.names())
            return f"There is no tool named `{name}`.{hint}"
        already = await self.state.switches.is_enabled(name) == enabled
        await self.state.switches.turn(name, enabled, by=caller.user)
        state = "on" if enabled else "off"
        if already:
            return f"`{name}` was already {state}."
        return f"`{name}` is now {state} for everyone, from the next model call."

    async def grant(self, caller: Caller, args: list[str]) -> str:
        parsed = self._user_and_role(args, "grant")
        if isinstance(parsed, str):
            return parsed
        user, role = parsed
        await self.state.grants.grant(caller.team, user, role, by=caller.user)
        await self.policy.resolver.forget(caller.team, user)
        return f"<@{user}> now holds *{role}*."

    async def revoke(self, caller: Caller, args: list[str]) -> str:
        parsed = self._user_and_role(args, "revoke")
        if isinstance(parsed, str):
            return parsed
        user, role = parsed
        removed = await self.state.grants.revoke(caller.team, user, role)
        await self.policy.resolver.forget(caller.team, user)
        if not removed:
            return (
                f"<@{user}> has no grant of *{role}*. Roles that come from the config, a user "
                "group or workspace admin status are changed there."
            )
        return f"<@{user}> no longer holds *{role}* by grant."

    def _user_and_role(self, args: list[str], verb: str) -> tuple[str, str] | str:
        usage = f"Usage: `{self.command} {verb} <@user> <role>`"
        if len(args) != 2:
            return usage
        user = user_id(args[0])
        if user is None:
            return f"`{args[0]}` is not a person. {usage}"
        role = args[1]
        if role not in self.roles:
            hint = did_you_mean(role, self.roles, "*{}*")
            known = ", ".join(self.roles) or "none are configured"
            return f"There is no role *{role}*.{hint} Roles: {known}."
        return user, role

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
        lines += [f"• <@{g.user}> — *{g.role}* (by <@{g.by}>, {_when(g.at)})" for g in grants] or [
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
                f"• {_when(e.at)} <@{e.actor}> {e.kind} `{e.action}`{target} → "
                f"{shorten(e.outcome, 200)}"
            )
        return "\n".join([lines[0], *limited(lines[1:])])

    async def usage(self, caller: Caller, args: list[str]) -> str:
        if len(args) > 1:
            return f"Usage: `{self.command} usage [@user]`"
        if args:
            user = user_id(args[0])
            if user is None:
                return f"`{args[0]}` is not a person. Usage: `{self.command} usage [@user]`"
            person = await self.state.usage.person(caller.team, user, days=7)
            return (
                f"<@{user}>\n• today: {_totals(person.last_day)}\n"
                f"• last 7 days: {_totals(person.all_days)}"
            )
        people = await self.state.usage.report(caller.team, days=7)
        if not people:
            return "Nobody has used the bot in the last 7 days."
        people.sort(key=lambda p: p.all_days.prompt_tokens + p.all_days.completion_tokens)
        rows = [
            f"• <@{p.user}> — {_totals(p.last_day)} | {_totals(p.all_days)}"
            for p in reversed(people)
        ]
        return "\n".join(["*Usage, today | last 7 days:*", *limited(rows)])

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
                    f"• {_when(item.at)} <@{item.user}> — {item.model or 'model ?'}{tools} — {link}"
                )
        return "\n".join(limited(lines))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _mention(member: str) -> str:
    return f"<!subteam^{member}>" if member.startswith("S") else f"<@{member}>"


def _when(at: float) -> str:
    return datetime.fromtimestamp(at or time.time(), UTC).strftime("%Y-%m-%d %H:%M UTC")


def _totals(t: UsageTotals) -> str:
    cost = f", ${t.cost:.4f}" if t.cost else ""
    return f"{t.turns} turns, {t.prompt_tokens:,} + {t.completion_tokens:,} tokens{cost}"
