"""The ``budgets:`` section of the config file (roles carry theirs: ``roles.NAME.budget``),
and the start-up check that a cost limit has a price to count with."""

from __future__ import annotations

import re
from collections.abc import Mapping
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.config.zones import known_zone
from permissions.budget import Budget
from permissions.config import RoleConfig

_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")


class BudgetsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workspace: Budget | None = Field(
        default=None, description="Daily limits for everyone in the workspace together."
    )
    users: dict[str, Budget] = Field(
        default_factory=dict, description="Daily limits for one person, by Slack user ID."
    )
    timezone: str = Field(
        default="UTC", description="Where a budget day starts and ends (an IANA time zone)."
    )

    @field_validator("users")
    @classmethod
    def _user_ids(cls, users: dict[str, Budget]) -> dict[str, Budget]:
        wrong = [user for user in users if not _USER.match(user)]
        if wrong:
            raise ValueError(f"{', '.join(map(repr, wrong))}: not a Slack user ID (U… or W…)")
        return users

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        return known_zone(name)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


def configured(budgets: BudgetsConfig, roles: Mapping[str, RoleConfig]) -> list[tuple[str, Budget]]:
    """Every limit on people in the config, with its key (channels' limits:
    ``channels.KEY.budget``, passed apart)."""
    found = [(f"roles.{name}.budget", role.budget) for name, role in roles.items() if role.budget]
    found += [(f"budgets.users.{user}", budget) for user, budget in budgets.users.items()]
    if budgets.workspace is not None:
        found.append(("budgets.workspace", budgets.workspace))
    return found


def unpriced_cost_limits(
    budgets: BudgetsConfig,
    roles: Mapping[str, RoleConfig],
    model: str,
    channels: Mapping[str, Budget | None] | None = None,
) -> list[str]:
    """A problem for every cost limit, when ``model`` has no price in ``llm.prices`` (nothing
    could count its cost, so the limit would never stop anyone). ``channels``: each channel
    entry's budget, by the entry's key."""
    found = configured(budgets, roles)
    found += [
        (f"channels.{key}.budget", budget)
        for key, budget in (channels or {}).items()
        if budget is not None
    ]
    return [
        f"{key}.daily_cost_usd: llm.prices has no price for the model {model!r}, "
        "so its cost cannot be counted"
        for key, budget in found
        if budget.daily_cost_usd is not None
    ]
