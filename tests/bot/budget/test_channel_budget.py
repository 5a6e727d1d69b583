"""A channel's budget: one more limit reserved in the same Redis step as the person's, their
roles' and the workspace's, counted for everyone in the channel together; over it the plain
words name the channel's limit; where a channel stands today; and 20 calls at once against
one channel's limit pass it by at most one call's estimate."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from datetime import time as clock_time
from zoneinfo import ZoneInfo

import pytest

from bot.budget.budgets import Budgets
from bot.budget.clock import budget_day
from bot.budget.config import BudgetsConfig
from bot.budget.estimate import CallEstimator
from bot.budget.ledger import Check
from bot.budget.refusal import OverBudget
from bot.llm.client import OpenAIChatModel
from bot.llm.pricing import Price
from bot.process.state import State
from permissions.budget import Budget
from permissions.config import RoleConfig
from permissions.policy import Person, Policy
from permissions.resolver import RoleResolver
from tests.fakes.clock import MovableClock
from tests.fakes.llm_server import FakeLLM, text

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

MakeModel = Callable[..., OpenAIChatModel]
HELLO = [{"role": "user", "content": "hello"}]
TOMORROW = datetime.now(UTC).date() + timedelta(days=1)
NOON = datetime.combine(TOMORROW, clock_time(12), tzinfo=UTC)
CHANNEL_BUDGET = Budget(daily_tokens=1000)


def budgets_on(
    state: State, model: OpenAIChatModel, roles: dict[str, RoleConfig] | None = None
) -> Budgets:
    roles = roles or {}
    policy = Policy(
        roles, RoleResolver(roles, grants=state.shared.grants, cache=state.shared.roles)
    )
    return Budgets(
        BudgetsConfig(),
        roles,
        state.budgets,
        state.shared.audit,
        CallEstimator(model.estimator, Price(input=1.0, output=2.0), max_tokens=100),
        policy,
        clock=MovableClock(NOON),
    )


def person(user: str, channel: str = "C0SUPPORT") -> Person:
    return Person("T1", user, channel, user_team="T1")


async def test_a_channels_limit_applies_without_any_other_limit(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("hi", usage=(900, 150)))
    model = make_model()
    budgets = budgets_on(state, model)
    assert not budgets.enabled  # no limit in the file
    assert await budgets.guard_for(model, person("U0ALICE")) is model
    alice = await budgets.guard_for(model, person("U0ALICE"), channel_budget=CHANNEL_BUDGET)
    await alice.complete(HELLO, [])
    # Bob, in the same channel, finds it spent; in another channel he is not limited.
    bob = await budgets.guard_for(model, person("U0BOB"), "171.1", channel_budget=CHANNEL_BUDGET)
    with pytest.raises(OverBudget) as caught:
        await bob.complete(HELLO, [])
    assert caught.value.user_message.startswith(
        "Sorry, I can't answer this now: this channel's daily limit of 1,000 tokens (for "
        "everyone in <#C0SUPPORT> together) is reached (1,050 tokens used today)."
    )
    assert len(fake_llm.requests) == 1
    entry = (await state.shared.audit.latest(1))[0]
    assert (entry.actor, entry.target, entry.outcome) == ("U0BOB", "channel C0SUPPORT", "refused")
    assert entry.detail["channel"] == "C0SUPPORT" and entry.detail["thread"] == "171.1"
    fake_llm.add(text("elsewhere", usage=(5, 5)))
    other = await budgets.guard_for(
        model, person("U0BOB", "C0OTHER"), channel_budget=CHANNEL_BUDGET
    )
    assert (await other.complete(HELLO, [])).text == "elsewhere"


async def test_the_channels_limit_is_held_with_the_persons_in_one_step(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    roles = {"member": RoleConfig(default=True, budget=Budget(daily_tokens=100_000))}
    fake_llm.add(text("hi", usage=(20, 10)))
    model = make_model()
    budgets = budgets_on(state, model, roles)
    guarded = await budgets.guard_for(model, person("U0ALICE"), channel_budget=CHANNEL_BUDGET)
    await guarded.complete(HELLO, [])
    _, day = budgets.today()
    alice, channel = await state.budgets.spent("T1", day, ["user:U0ALICE", "channel:C0SUPPORT"])
    assert alice.tokens == channel.tokens == 30
    assert alice.peak_tokens == channel.peak_tokens > 0  # held in both by the same reservation
    standing = await budgets.standing_of_channel(
        "T1", "C0SUPPORT", Budget(daily_tokens=1000, daily_cost_usd=1)
    )
    assert [(limit.scope, limit.metric, spent) for limit, spent in standing.limits] == [
        ("channel", "tokens", 30),
        ("channel", "cost", pytest.approx(40e-6)),  # 20 in at $1/M, 10 out at $2/M
    ]


async def test_twenty_reservations_at_once_overshoot_a_channels_limit_by_at_most_one_estimate(
    state: State,
) -> None:
    day = budget_day(datetime.now(UTC), ZoneInfo("UTC"))
    limit, estimate = 1000, 300

    async def reserve(n: int) -> bool:
        checks = [Check(f"user:U{n}", "tokens", 10**6), Check("channel:C0SUPPORT", "tokens", limit)]
        reached = await state.budgets.reserve(
            "T1", day, f"call-{n}", checks, estimate, 0, now=time.time(), hold_s=600
        )
        return reached is None

    admitted = await asyncio.gather(*(reserve(n) for n in range(20)))
    (channel,) = await state.budgets.spent("T1", day, ["channel:C0SUPPORT"])
    assert sum(admitted) == 4  # held 0, 300, 600, 900: each below the limit when admitted
    assert channel.held_tokens == 4 * estimate
    assert channel.held_tokens - limit <= estimate
    assert channel.peak_spent == channel.held_tokens
