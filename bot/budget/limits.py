"""Which limits apply to a person (pure): their own (``budgets.users``), each role they hold
(``roles.NAME.budget``: what each person holding it may spend), the channel's where they ask
(``channels.KEY.budget`` or set in Slack: what everyone in it spends together) and the
workspace's (what everyone spends together). Every one that applies is checked; the tightest
is reached first, so it is the one that stops a turn and the one named."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.budget.config import BudgetsConfig
from permissions.budget import Budget
from permissions.config import RoleConfig

Scope = Literal["user", "role", "channel", "workspace"]
Metric = Literal["tokens", "cost"]
WORKSPACE = "workspace"  # the counter everyone in the workspace shares


@dataclass(frozen=True)
class Limit:
    scope: Scope
    metric: Metric
    amount: float  # tokens, or cost in the currency of llm.prices
    role: str = ""  # the role it comes from (scope "role")
    channel: str = ""  # the channel whose spend it limits (scope "channel")

    def counter(self, user: str) -> str:
        """Whose spend it limits: the person's own (their limit and their roles'), the
        channel's (``channel:C…``) or the workspace's."""
        if self.scope == "workspace":
            return WORKSPACE
        if self.scope == "channel":
            return f"channel:{self.channel}"
        return f"user:{user}"

    @property
    def source(self) -> str:
        """Where it comes from, in a word or two: ``user``, ``role NAME``, ``channel C…``,
        ``workspace``."""
        if self.scope == "role":
            return f"role {self.role}"
        if self.scope == "channel":
            return f"channel {self.channel}"
        return self.scope


def applicable(
    budgets: BudgetsConfig,
    roles: Mapping[str, RoleConfig],
    held: Sequence[str],
    user: str,
    channel: tuple[str, Budget] | None = None,
) -> list[Limit]:
    """The limits on ``user`` holding the roles ``held`` (``channel``: where they ask, with its
    budget): theirs first, then their roles', the channel's and the workspace's; the
    tightest first within each counter and metric."""
    found = _of(budgets.users.get(user), "user")
    for name in dict.fromkeys(held):
        role = roles.get(name)
        if role is not None:
            found += _of(role.budget, "role", role=name)
    if channel is not None:
        found += channel_limits(*channel)
    found += _of(budgets.workspace, "workspace")
    # Stable: among equal amounts the person's own limit stays first, then the roles' order.
    return sorted(found, key=lambda limit: (_RANK[limit.scope], limit.metric, limit.amount))


def channel_limits(channel: str, budget: Budget) -> list[Limit]:
    """The limits a channel's budget gives: what everyone in ``channel`` spends together."""
    return _of(budget, "channel", channel=channel)


_RANK = {"user": 0, "role": 0, "channel": 1, "workspace": 2}


def _of(budget: Budget | None, scope: Scope, *, role: str = "", channel: str = "") -> list[Limit]:
    if budget is None:
        return []
    limits = []
    if budget.daily_tokens is not None:
        limits.append(Limit(scope, "tokens", budget.daily_tokens, role, channel))
    if budget.daily_cost_usd is not None:
        limits.append(Limit(scope, "cost", budget.daily_cost_usd, role, channel))
    return limits
