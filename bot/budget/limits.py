"""Which limits apply to a person (pure): their own (``budgets.users``), each role they hold
(``roles.NAME.budget``: what each person holding it may spend), and the workspace's (what
everyone spends together). Every one that applies is checked; the tightest is reached first,
so it is the one that stops a turn and the one named."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.budget.config import BudgetsConfig
from permissions.budget import Budget
from permissions.config import RoleConfig

Scope = Literal["user", "role", "workspace"]
Metric = Literal["tokens", "cost"]
WORKSPACE = "workspace"  # the counter everyone in the workspace shares


@dataclass(frozen=True)
class Limit:
    scope: Scope
    metric: Metric
    amount: float  # tokens, or cost in the currency of llm.prices
    role: str = ""  # the role it comes from (scope "role")

    def counter(self, user: str) -> str:
        """Whose spend it limits: the person's own (their limit and their roles'), or the
        workspace's."""
        return WORKSPACE if self.scope == "workspace" else f"user:{user}"

    @property
    def source(self) -> str:
        """Where it comes from, in a word or two: ``user``, ``role NAME``, ``workspace``."""
        return f"role {self.role}" if self.scope == "role" else self.scope


def applicable(
    budgets: BudgetsConfig, roles: Mapping[str, RoleConfig], held: Sequence[str], user: str
) -> list[Limit]:
    """The limits on ``user`` holding the roles ``held``: theirs first, then their roles' and
    the workspace's; the tightest first within each counter and metric."""
    found = _of(budgets.users.get(user), "user")
    for name in dict.fromkeys(held):
        role = roles.get(name)
        if role is not None:
            found += _of(role.budget, "role", name)
    found += _of(budgets.workspace, "workspace")
    # Stable: among equal amounts the person's own limit stays first, then the roles' order.
    return sorted(found, key=lambda limit: (limit.scope == "workspace", limit.metric, limit.amount))


def _of(budget: Budget | None, scope: Scope, role: str = "") -> list[Limit]:
    if budget is None:
        return []
    limits = []
    if budget.daily_tokens is not None:
        limits.append(Limit(scope, "tokens", budget.daily_tokens, role))
    if budget.daily_cost_usd is not None:
        limits.append(Limit(scope, "cost", budget.daily_cost_usd, role))
    return limits
