"""The admin commands on a test's real Redis state, with a ``channels:`` section: admins,
everyone else, and channels shared with another organisation as the test says; the clock
`resume` reads as the test sets it."""

from __future__ import annotations

import time
from typing import Any

from bot.admin.commands import AdminCommands
from bot.admin.context import AdminStores, Caller
from bot.admin.schedules import Clock
from bot.budget.budgets import Budgets
from bot.budget.estimate import CallEstimator
from bot.config.schema import AppConfig
from bot.llm.tokens import TokenEstimator
from bot.process.state import State
from bot.state.audit import AuditEntry, AuditKind
from permissions.policy import Policy
from permissions.resolver import RoleResolver
from tools import tool
from tools.registry import ToolRegistry

ROLES = {
    "admins": {"admin": True, "members": ["UADMIN"], "tools": ["*"]},
    "everyone": {"default": True, "tools": ["*"]},
}
CHANNELS: dict[str, Any] = {
    "C0SUPPORT": {
        "instructions": "You answer customer-support questions. Link the runbook.",
        "tools": ["search_*", "get_time"],
        "mcp_servers": ["zendesk"],
        "budget": {"daily_tokens": 300000, "daily_cost_usd": 5},
        "memory": True,
    },
    "C0ENG*": {"tools": ["get_*", "calculate"]},
    "C0LOCKED": {"locked": True, "instructions": "Fixed."},
    "external": {"tools": ["get_time"], "memory": False},
}
ADMIN = Caller("T1", "UADMIN", "C0SUPPORT", user_team="T1")
ALICE = Caller("T1", "UALICE", "C0SUPPORT", user_team="T1")
BOB = Caller("T1", "UBOB", "C0SUPPORT", user_team="T1")


@tool
def get_time() -> str:
    """The time."""
    return "10:00"


@tool
def calculate(expression: str) -> str:
    """Arithmetic."""
    return expression


def admin_commands(
    state: State,
    *,
    shared: frozenset[str] = frozenset(),
    channels: dict[str, Any] | None = None,
    clock: Clock = time.time,
) -> AdminCommands:
    """``shared``: the channels Slack says are shared with another organisation; ``clock``:
    what `resume` runs next from."""
    config = AppConfig.model_validate(
        {
            "roles": ROLES,
            "channels": CHANNELS if channels is None else channels,
            "mcp": {"servers": {"zendesk": {"command": "true"}, "github": {"command": "true"}}},
        }
    )
    resolver = RoleResolver(config.roles, grants=state.shared.grants, cache=state.shared.roles)
    policy = Policy(config.roles, resolver, state.shared.switches, state.shared.policy_reads)
    budgets = Budgets(
        config.budgets,
        config.roles,
        state.budgets,
        state.shared.audit,
        CallEstimator(TokenEstimator(), None),
        policy,
    )

    async def external(channel: str) -> bool:
        return channel in shared

    stores = AdminStores(
        state.shared.switches,
        state.shared.grants,
        state.shared.audit,
        state.shared.usage,
        state.shared.feedback,
        budgets,
        state.shared.channels,
        state.shared.memory,
        external,
        state.shared.schedules,
    )
    registry = ToolRegistry()
    registry.add(get_time)
    registry.add(calculate)
    return AdminCommands(
        "/agent",
        policy,
        registry,
        config.roles,
        stores,
        channels=config.channels,
        servers=list(config.mcp.servers),
        clock=clock,
    )


async def audited(state: State, kind: AuditKind) -> list[AuditEntry]:
    """The entries of ``kind``, oldest first."""
    return [e for e in reversed(await state.shared.audit.latest(100)) if e.kind is kind]
