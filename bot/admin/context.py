"""What a subcommand runs with: who calls it, the stores it reads and writes, how it links
to a message, what it answers (words, and for ``connect`` the person's start link), and its
entry in the audit log."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.admin.parsing import Invocation
from bot.budget.budgets import Budgets
from bot.state.audit import AuditEntry, AuditKind, AuditLog
from bot.state.channel_memory import ChannelMemory
from bot.state.channel_settings import ChannelOverrides
from bot.state.feedback import FeedbackLog
from bot.state.grants import RoleGrants
from bot.state.schedules import ScheduleStore
from bot.state.switches import ToolSwitches
from bot.state.usage import UsageCounters
from permissions.policy import Person

if TYPE_CHECKING:  # loaded only with a server that signs people in (they load the MCP SDK)
    from bot.oauth.side import OAuthSide
    from tools.mcp.oauth.account import Account
    from tools.mcp.oauth.pending import PendingAuthorization

# A person's authorization request for a server, built by the SDK and captured (the
# personal server's ``begin``); None: the server answers without a sign-in.
BeginSignIn = Callable[["Account", str], Awaitable["PendingAuthorization | None"]]
# Is this channel shared with another organisation (Slack Connect)?
External = Callable[[str], Awaitable[bool]]


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
    budgets: Budgets  # spending limits, and where each person stands against them
    channels: ChannelOverrides  # channel settings set in Slack
    memory: ChannelMemory  # the notes of each channel, and of each person's DMs
    external: External  # whether a channel is shared with another organisation
    schedules: ScheduleStore  # people's scheduled asks
    oauth: OAuthSide | None = None  # people's connections (None: no server signs people in)
    begin_sign_in: BeginSignIn | None = None  # what `connect` starts a sign-in with


@dataclass(frozen=True)
class ConnectLink:
    """A start link for the person alone (it carries the sign-in's state: never logged)."""

    server: str
    url: str = field(repr=False)
    within: str  # how long it opens, in words


@dataclass(frozen=True)
class Reply:
    """A subcommand's answer, shown only to the person: words, and a start link button."""

    text: str
    link: ConnectLink | None = None


Permalink = Callable[[str, str, str], str]  # channel, ts, thread ts -> a link to the message


def plain_link(channel: str, ts: str, thread_ts: str) -> str:
    return f"{channel} {ts}"


def admin_entry(caller: Caller, invocation: Invocation, outcome: str = "ok") -> AuditEntry:
    """The audit entry of a subcommand run (or refused: ``outcome``)."""
    return AuditEntry(
        kind=AuditKind.ADMIN,
        actor=caller.user,
        action=invocation.name,
        target=" ".join(invocation.args),
        outcome=outcome,
        detail={"channel": caller.channel or "", "team": caller.team},
    )
