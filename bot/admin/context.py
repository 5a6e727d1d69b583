"""What a subcommand runs with: who calls it, the stores it reads and writes, and how it
links to a message."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.budget.budgets import Budgets
from bot.state.audit import AuditLog
from bot.state.feedback import FeedbackLog
from bot.state.grants import RoleGrants
from bot.state.switches import ToolSwitches
from bot.state.usage import UsageCounters
from permissions.policy import Person


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


Permalink = Callable[[str, str, str], str]  # channel, ts, thread ts -> a link to the message


def plain_link(channel: str, ts: str, thread_ts: str) -> str:
    return f"{channel} {ts}"
