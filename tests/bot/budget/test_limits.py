"""Which limits apply to a person, the tightest first, and the config that gives them
(validated at start-up, errors naming the key). Pure."""

from __future__ import annotations

from typing import Any

import pytest

from bot.budget.config import BudgetsConfig, unpriced_cost_limits
from bot.budget.limits import Limit, applicable, channel_limits
from bot.budget.wording import limit_words
from bot.config.errors import ConfigError
from bot.config.loading import parse_config
from permissions.budget import Budget
from permissions.config import RoleConfig

ROLES = {
    "member": RoleConfig(default=True, budget={"daily_tokens": 100_000}),
    "support": RoleConfig(budget={"daily_tokens": 50_000, "daily_cost_usd": 2.0}),
    "admin": RoleConfig(admin=True),  # no budget: adds no limit
}
BUDGETS = BudgetsConfig(
    workspace={"daily_tokens": 5_000_000, "daily_cost_usd": 100},
    users={"U0ALICE": {"daily_tokens": 80_000}},
)


def test_a_person_gets_their_own_limit_their_roles_and_the_workspaces() -> None:
    limits = applicable(BUDGETS, ROLES, ["support", "member", "admin"], "U0ALICE")
    assert limits == [
        Limit("role", "cost", 2.0, "support"),
        Limit("role", "tokens", 50_000, "support"),  # the tightest tokens limit first
        Limit("user", "tokens", 80_000),
        Limit("role", "tokens", 100_000, "member"),
        Limit("workspace", "cost", 100),
        Limit("workspace", "tokens", 5_000_000),
    ]
    # Every one is checked against the person's own spend, except the workspace's.
    assert {limit.counter("U0ALICE") for limit in limits} == {"user:U0ALICE", "workspace"}


def test_without_a_limit_of_their_own_only_roles_and_workspace_apply() -> None:
    assert applicable(BUDGETS, ROLES, ["member"], "U0BOB") == [
        Limit("role", "tokens", 100_000, "member"),
        Limit("workspace", "cost", 100),
        Limit("workspace", "tokens", 5_000_000),
    ]


def test_on_equal_amounts_the_persons_own_limit_is_named_first() -> None:
    budgets = BudgetsConfig(users={"U0ALICE": {"daily_tokens": 100_000}})
    assert applicable(budgets, ROLES, ["member"], "U0ALICE")[0] == Limit("user", "tokens", 100_000)


def test_no_config_no_limits() -> None:
    assert applicable(BudgetsConfig(), {}, [], "U0ALICE") == []
    assert applicable(BudgetsConfig(), ROLES, ["admin"], "U0ALICE") == []


def test_unknown_roles_are_ignored() -> None:
    # A stale grant of a role since removed from the config.
    assert applicable(BudgetsConfig(), ROLES, ["gone"], "U0ALICE") == []


def config_error(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    return str(caught.value)


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        (
            "budgets: {timezone: Mars/Olympus}",
            "budgets.timezone: not a time zone the IANA database knows",
        ),
        ("budgets: {workspace: {daily_tokens: 0}}", "budgets.workspace.daily_tokens: Input should"),
        (
            "budgets: {users: {U0ALICE: {daily_cost_usd: -1}}}",
            "budgets.users.U0ALICE.daily_cost_usd: Input should be greater than 0",
        ),
        ("budgets: {users: {alice: {daily_tokens: 5}}}", "budgets.users: 'alice': not a Slack"),
        ("budgets: {workspace: {}}", "budgets.workspace: set daily_tokens, daily_cost_usd or both"),
        ("budgets: {daily_tokens: 5}", "budgets.daily_tokens: unknown key"),
        (
            "roles: {member: {default: true, budget: {daily_token: 5}}}",
            "roles.member.budget.daily_token: unknown key",
        ),
    ],
)
def test_a_bad_budget_is_refused_naming_the_key(yaml: str, message: str) -> None:
    assert message in config_error(yaml)


def test_a_good_config_parses() -> None:
    config = parse_config(
        "budgets:\n"
        "  timezone: Europe/Berlin\n"
        "  workspace: {daily_cost_usd: 20}\n"
        "  users: {U0ALICE: {daily_tokens: 1000}}\n"
        "roles:\n"
        "  member: {default: true, budget: {daily_tokens: 200000, daily_cost_usd: 1.5}}\n"
    )
    assert config.budgets.zone.key == "Europe/Berlin"
    assert config.roles["member"].budget is not None
    assert config.roles["member"].budget.daily_cost_usd == 1.5


def test_cost_limits_need_a_price() -> None:
    data: dict[str, Any] = {"daily_cost_usd": 1}
    roles = {"member": RoleConfig(default=True, budget=data)}
    budgets = BudgetsConfig(workspace={"daily_tokens": 10}, users={"U0ALICE": data})
    assert unpriced_cost_limits(budgets, roles, "gpt-x") == [
        "roles.member.budget.daily_cost_usd: llm.prices has no price for the model 'gpt-x', "
        "so its cost cannot be counted",
        "budgets.users.U0ALICE.daily_cost_usd: llm.prices has no price for the model 'gpt-x', "
        "so its cost cannot be counted",
    ]


def test_a_channels_limit_joins_the_persons_and_counts_everyone_in_the_channel() -> None:
    channel = ("C0SUPPORT", Budget(daily_tokens=300_000, daily_cost_usd=5))
    limits = applicable(BUDGETS, ROLES, ["member"], "U0ALICE", channel)
    assert limits == [
        Limit("user", "tokens", 80_000),
        Limit("role", "tokens", 100_000, "member"),
        Limit("channel", "cost", 5, channel="C0SUPPORT"),
        Limit("channel", "tokens", 300_000, channel="C0SUPPORT"),
        Limit("workspace", "cost", 100),
        Limit("workspace", "tokens", 5_000_000),
    ]
    assert limits[2].counter("U0ALICE") == limits[2].counter("U0BOB") == "channel:C0SUPPORT"
    assert limits[2].source == "channel C0SUPPORT"
    assert channel_limits("C0X", Budget(daily_tokens=10)) == [
        Limit("channel", "tokens", 10, channel="C0X")
    ]


def test_a_channels_limit_in_words() -> None:
    assert limit_words(Limit("channel", "tokens", 300_000, channel="C0SUPPORT")) == (
        "this channel's daily limit of 300,000 tokens (for everyone in <#C0SUPPORT> together)"
    )


def test_a_channels_cost_limit_needs_a_price_too() -> None:
    channels = {"C0SUPPORT": Budget(daily_cost_usd=5), "C0ENG*": None, "*": Budget(daily_tokens=9)}
    assert unpriced_cost_limits(BudgetsConfig(), {}, "gpt-x", channels) == [
        "channels.C0SUPPORT.budget.daily_cost_usd: llm.prices has no price for the model "
        "'gpt-x', so its cost cannot be counted"
    ]
