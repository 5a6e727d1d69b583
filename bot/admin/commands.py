"""Running a subcommand for a person, and the ones that change something (switches, grants).
What the others show is in ``reports.py``, a channel's settings in ``channel.py``, its notes in
``memory.py``. Replies are Slack mrkdwn, shown only to them.

Everyone: ``help``, ``tools``, ``whoami``, ``usage`` (their own), ``channel`` (the settings in
force where it is typed), ``memory`` (the notes saved there), ``forget <id>`` (their own
notes; in a DM also ``forget all``), ``schedules`` and ``pause``/``resume``/``unschedule
<id>`` (their own schedules; ``schedules.py``), and with MCP servers that sign each person in:
``connect <server>`` (a start link only they get, which also wakes every turn waiting for that
connection; people from other workspaces only with ``oauth.allow_external``), ``connections``
(their own), ``disconnect <server>`` (revoked at the authorization server where it can be,
then forgotten). Admins (a role with ``admin: true``) also: ``tools all``,
``enable``/``disable <tool>``, ``grant``/``revoke <@user> <role>``, ``roles``, ``audit [n]``,
``usage [@user]`` (anyone's, and the workspace's), ``connections all`` (who is connected to
what; never a token), ``channel <key> …`` (the channel's settings), ``forget`` anyone's note
and ``forget all`` in a channel, ``schedules all`` (everyone's) and anyone's schedule paused,
resumed or removed. Every admin subcommand, every ``connect`` and every refused attempt is
written to the audit log (a connection's own entries too: ``connected``, ``disconnected``,
``revoke_failed``; a channel's changes, its notes' removals and schedules' changes by their
stores, with what they were).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING

from bot.admin.channel import ChannelCommands
from bot.admin.context import (
    AdminStores,
    Caller,
    ConnectLink,
    Permalink,
    Reply,
    admin_entry,
    plain_link,
)
from bot.admin.memory import MemoryCommands
from bot.admin.parsing import CHANNEL_CHANGE, Invocation, did_you_mean, parse, user_id
from bot.admin.reports import AdminReports, host
from bot.admin.schedules import Clock, ScheduleCommands
from bot.channels.config import ChannelsConfig
from permissions.config import RoleConfig
from permissions.policy import Policy
from tools.registry import ToolRegistry

if TYPE_CHECKING:
    from tools.mcp.oauth.personal import PersonalServer

EVERYONE = (
    "help",
    "tools",
    "whoami",
    "usage",  # a person's own; admins' anyone's
    "connect",
    "connections",  # a person's own
    "disconnect",
    "channel",  # the settings in force here
    "memory",
    "forget",  # one's own notes; admins' anyone's, and all of a channel's
    "schedules",  # one's own
    "pause",  # one's own schedule; admins' anyone's
    "resume",
    "unschedule",
)
ADMIN = (
    "tools all",
    "connections all",
    "enable",
    "disable",
    "grant",
    "revoke",
    "roles",
    "audit",
    "feedback",
    "schedules all",
    CHANNEL_CHANGE,
)
SELF_AUDITED = (CHANNEL_CHANGE,)  # its store audits the change, with what it was before
CONNECT_TTL_S = 900  # how long /agent connect's link opens
CONNECT_WITHIN = "15 minutes"

Answer = str | Reply
Handler = Callable[[Caller, Invocation], Awaitable[Answer]]


def with_args(run: Callable[[Caller, list[str]], Awaitable[Answer]]) -> Handler:
    """A subcommand that reads only its words."""

    async def handler(caller: Caller, invocation: Invocation) -> Answer:
        return await run(caller, invocation.args)

    return handler


class AdminCommands:
    def __init__(
        self,
        command: str,
        policy: Policy,
        registry: ToolRegistry,
        roles: dict[str, RoleConfig],
        state: AdminStores,
        *,
        permalink: Permalink = plain_link,
        personal: Mapping[str, PersonalServer] | None = None,
        channels: ChannelsConfig | None = None,
        servers: Collection[str] = (),
        clock: Clock = time.time,
    ) -> None:
        """``channels``: the file's channel entries; ``servers``: the configured MCP
        servers (what `channel servers` may name); ``clock``: what `resume` runs next from."""
        self.command = command
        self.policy = policy
        self.registry = registry
        self.roles = roles
        self.state = state
        self.reports = reports = AdminReports(
            command, policy, registry, roles, state, permalink, personal
        )
        self.channel = channel = ChannelCommands(command, channels or {}, servers, registry, state)
        memory = MemoryCommands(command, policy, state)
        self.schedules = schedules = ScheduleCommands(command, policy, state, clock)
        self._handlers: dict[str, Handler] = {
            name: with_args(run)
            for name, run in {
                "help": self.help,
                "tools": reports.tools,
                "whoami": reports.whoami,
                "tools all": reports.tools_all,
                "enable": self.enable,
                "disable": self.disable,
                "grant": self.grant,
                "revoke": self.revoke,
                "roles": reports.list_roles,
                "audit": reports.audit,
                "usage": self.usage,
                "feedback": reports.feedback,
                "connect": self.connect,
                "connections": reports.connections,
                "connections all": reports.connections_all,
                "disconnect": self.disconnect,
            }.items()
        }
        self._handlers |= {
            "channel": channel.show,
            CHANNEL_CHANGE: channel.change,
            "memory": memory.notes,
            "forget": memory.forget,
            "schedules": schedules.own,
            "schedules all": schedules.everyone,
            "pause": schedules.pause,
            "resume": schedules.resume,
            "unschedule": schedules.unschedule,
        }

    async def run(self, caller: Caller, text: str) -> Reply:
        reply = await self._run(caller, text)
        return reply if isinstance(reply, Reply) else Reply(reply)

    async def _run(self, caller: Caller, text: str) -> str | Reply:
        invocation = parse(text)
        handler = self._handlers.get(invocation.name)
        if handler is None:
            names = [name for name in (*EVERYONE, *ADMIN) if name != CHANNEL_CHANGE]
            hint = did_you_mean(invocation.name, names, f"`{self.command} {{}}`")
            return (
                f"I don't know `{invocation.name}`.{hint} `{self.command} help` lists the commands."
            )
        if invocation.name in ADMIN:
            if not await self.policy.is_admin(caller.person):
                await self._audit(caller, invocation, outcome="refused")
                return (
                    f"Sorry, `{self.command} {invocation.said}` is only for admins. "
                    f"`{self.command} help` shows what you can use."
                )
            reply = await handler(caller, invocation)
            if invocation.name not in SELF_AUDITED:
                await self._audit(caller, invocation)
            return reply
        return await handler(caller, invocation)

    async def _audit(self, caller: Caller, invocation: Invocation, outcome: str = "ok") -> None:
        await self.state.audit.add(admin_entry(caller, invocation, outcome))

    # --- everyone ------------------------------------------------------------------------

    async def help(self, caller: Caller, args: list[str]) -> str:
        c = self.command
        lines = [
            f"*{c}* — every reply is shown only to you.",
            f"• `{c} tools` — the tools you may use here",
            f"• `{c} whoami` — your roles, where each comes from, and your tools",
            f"• `{c} usage` — what you spent today and over 7 days, against your limits",
            f"• `{c} channel` — the settings in force here, and where each comes from",
            f"• `{c} memory` — the notes saved here (in a DM: yours), with their ids",
            f"• `{c} forget <id>` — remove a note you saved"
            + (f"; `{c} forget all` empties your DM notes" if _dm(caller) else ""),
            f"• `{c} schedules` — your schedules: each one's id, when it runs next, its last run",
            f"• `{c} pause <id>` / `{c} resume <id>` / `{c} unschedule <id>` — one of your "
            "schedules (ask me in a message to make one)",
        ]
        if self.state.oauth is not None:
            servers = ", ".join(f"`{name}`" for name in sorted(self.state.oauth.servers))
            lines += [
                f"• `{c} connect <server>` — sign in to a server that signs each person in "
                f"({servers}); the link is yours alone",
                f"• `{c} connections` — your connections, and whether they renew by themselves",
                f"• `{c} disconnect <server>` — revoke your access there and forget it here",
            ]
        if await self.policy.is_admin(caller.person):
            lines += [
                "*Admin:*",
                f"• `{c} tools all` — every tool, its source, on or off, and who may use it",
                f"• `{c} enable <tool>` / `{c} disable <tool>` — for everyone, at once",
                f"• `{c} grant <@user> <role>` / `{c} revoke <@user> <role>`",
                f"• `{c} roles` — the roles and the grants",
                f"• `{c} audit [n]` — the latest tool runs and admin actions",
                f"• `{c} usage [@user]` — anyone's spend, or everyone's and the workspace limits",
                f"• `{c} feedback` — answers rated per day, and the latest bad ones",
                f"• `{c} channel instructions <text>` / `tools <glob> …` / `servers <name> …` "
                "— this channel's, from the next turn on every replica",
                f"• `{c} channel budget daily_tokens=<n> daily_cost_usd=<x>` / "
                "`memory on|off` / `reset [<key>]`",
                f"• `{c} forget <id>` — anyone's note; `{c} forget all` — empty this channel's "
                "memory",
                f"• `{c} schedules all` — everyone's schedules; `pause`, `resume` and "
                "`unschedule` act on anyone's",
            ]
            if self.state.oauth is not None:
                lines.append(
                    f"• `{c} connections all` — who is connected to which server (never a token)"
                )
        return "\n".join(lines)

    async def usage(self, caller: Caller, args: list[str]) -> str:
        """Admins: anyone's, or the workspace's. Others: their own only."""
        invocation = Invocation("usage", args)
        if await self.policy.is_admin(caller.person):
            reply = await self.reports.usage(caller, args)
            await self._audit(caller, invocation)
            return reply
        if not args or (len(args) == 1 and user_id(args[0]) == caller.user):
            return await self.reports.own_usage(caller)
        await self._audit(caller, invocation, outcome="refused")
        return (
            f"Sorry, only admins can see other people's usage. `{self.command} usage` shows yours."
        )

    # --- admins --------------------------------------------------------------------------

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

    # --- connections to MCP servers that sign each person in ------------------------------

    def _server(self, args: list[str], verb: str) -> str | tuple[str, str]:
        """The server named (and no error), or what to say."""
        oauth = self.state.oauth
        if oauth is None:
            return "No MCP server here signs people in."
        if len(args) != 1:
            return f"Usage: `{self.command} {verb} <server>`"
        server = args[0].strip("`")
        if server not in oauth.servers:
            hint = did_you_mean(server, oauth.servers)
            known = ", ".join(f"`{name}`" for name in sorted(oauth.servers))
            return f"`{server}` is not a server people connect to here.{hint} Servers: {known}."
        return server, ""

    async def connect(self, caller: Caller, args: list[str]) -> str | Reply:
        """A start link for the person alone; connecting wakes every turn that waits for
        this connection."""
        named = self._server(args, "connect")
        if isinstance(named, str):
            return named
        server, _ = named
        oauth = self.state.oauth
        assert oauth is not None  # _server said so
        invocation = Invocation("connect", args)
        external = caller.person.external
        if external and not oauth.config.allow_external:
            await self._audit(caller, invocation, outcome="refused")
            return f"People from other workspaces cannot connect `{server}` here."
        if self.state.begin_sign_in is None:
            return f"`{self.command} connect` is not available in this process."
        from tools.mcp.oauth.account import Account
        from tools.mcp.oauth.grants import GrantUnavailable

        account = Account(caller.team, caller.user)
        try:
            pending = await self.state.begin_sign_in(account, server)
        except GrantUnavailable:
            return f"`{server}`'s sign-in service is unavailable right now. Try again later."
        if pending is None:
            return (
                f"`{server}` answered without asking you to sign in, so there is nothing to "
                "connect now. If one of its tools needs your account, the bot asks you to "
                "connect then, in the thread."
            )
        url = await oauth.sign_ins.begin(
            account, server, pending, request_id=None, external=external, ttl_s=CONNECT_TTL_S
        )
        await self._audit(caller, invocation)
        return Reply(
            f"Connect `{server}` with the button below: it is yours alone, and opens once "
            f"within {CONNECT_WITHIN}.",
            ConnectLink(server, url, CONNECT_WITHIN),
        )

    async def disconnect(self, caller: Caller, args: list[str]) -> str:
        named = self._server(args, "disconnect")
        if isinstance(named, str):
            return named
        server, _ = named
        oauth = self.state.oauth
        assert oauth is not None
        from tools.mcp.oauth.account import Account
        from tools.mcp.oauth.grants import NotRevocable, Revoked, RevokeFailed

        done = await oauth.sign_ins.disconnect(
            Account(caller.team, caller.user), server, actor=caller.user
        )
        if not done.connected:
            return f"You are not connected to `{server}`."
        where = host(done.issuer) if done.issuer else "the server's sign-in site"
        forgot = f"Disconnected `{server}`: the bot forgot your access"
        if isinstance(done.revoked, Revoked):
            return f"{forgot}, and {where} revoked it."
        if isinstance(done.revoked, NotRevocable):
            return f"{forgot}. {where} cannot revoke it from here: remove the bot's access there."
        if isinstance(done.revoked, RevokeFailed):
            return (
                f"{forgot}, but revoking it at {where} failed ({done.revoked.reason}): remove "
                "the bot's access there."
            )
        return f"{forgot}."


def _dm(caller: Caller) -> bool:
    return (caller.channel or "").startswith("D")
