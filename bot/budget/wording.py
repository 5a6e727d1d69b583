"""How limits and amounts read, in a refusal and in ``/agent usage`` (pure)."""

from __future__ import annotations

from datetime import datetime

from bot.budget.clock import BudgetDay
from bot.budget.limits import Limit, Metric


def amount(metric: Metric, value: float) -> str:
    """``12,345 tokens``, ``$1.50``, ``$0.0042``."""
    if metric == "tokens":
        return f"{round(value):,} tokens"
    return f"${value:,.2f}" if value >= 0.1 or value == 0 else f"${value:.4f}"


def limit_words(limit: Limit) -> str:
    """The limit as a person reads it: whose, and how much."""
    how_much = amount(limit.metric, limit.amount)
    if limit.scope == "user":
        return f"your daily limit of {how_much}"
    if limit.scope == "role":
        return f"the daily limit of {how_much} that the role *{limit.role}* gives each person"
    if limit.scope == "channel":
        everyone = f"for everyone in <#{limit.channel}> together"
        return f"this channel's daily limit of {how_much} ({everyone})"
    return f"the workspace's daily limit of {how_much} (for everyone together)"


def reset(day: BudgetDay, now: datetime) -> str:
    """``00:00 UTC on 2026-03-03, in 3 h 20 min`` (midnight where the budget's zone is)."""
    at = day.resets
    return f"{at:%H:%M} {at.tzinfo} on {at:%Y-%m-%d}, in {day.resets_in(now)}"
