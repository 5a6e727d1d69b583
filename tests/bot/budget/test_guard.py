"""The model within a person's limits, against the fake LLM server and the real Redis: each
call reserved before it is made and settled with the usage the server reports; a refusal
before the model is called (also the first call of a turn, which then ends with the plain
words); a failed call released, a stopped one counted as far as it streamed; the day's
reset with a clock the test moves."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

import pytest
from prometheus_client import REGISTRY

from bot.agent.loop import LoopSettings, run_turn
from bot.agent.result import StopReason
from bot.budget.budgets import Budgets, Spender
from bot.budget.config import BudgetsConfig
from bot.budget.estimate import CallEstimator
from bot.budget.ledger import Spend
from bot.budget.refusal import OverBudget
from bot.llm.client import OpenAIChatModel
from bot.llm.errors import LLMError
from bot.llm.pricing import Price
from bot.process.state import State
from permissions.budget import Budget
from permissions.config import RoleConfig
from permissions.policy import Policy
from permissions.resolver import RoleResolver
from tests.fakes.clock import MovableClock
from tests.fakes.llm_server import FakeLLM, error, text
from tests.waiting import until
from tools import StaticToolset

MakeModel = Callable[..., OpenAIChatModel]
PRICE = Price(input=1.0, output=2.0)  # per million tokens
ROLES = {"member": RoleConfig(default=True, budget=Budget(daily_tokens=1000))}
ALICE = Spender("T1", "U0ALICE", ("member",), "C1", "171.000001")
HELLO = [{"role": "user", "content": "hello"}]
# Tomorrow noon: the day's counters must not expire at once in the real Redis.
TOMORROW = datetime.now(UTC).date() + timedelta(days=1)
NOON = datetime.combine(TOMORROW, time(12), tzinfo=UTC)


def budgets_on(
    state: State,
    model: OpenAIChatModel,
    config: BudgetsConfig | None = None,
    clock: MovableClock | None = None,
) -> Budgets:
    policy = Policy(
        ROLES, RoleResolver(ROLES, grants=state.shared.grants, cache=state.shared.roles)
    )
    return Budgets(
        config or BudgetsConfig(),
        ROLES,
        state.budgets,
        state.shared.audit,
        CallEstimator(model.estimator, PRICE, max_tokens=100),
        policy,
        clock=clock or MovableClock(NOON),
    )


def refusals(scope: str, metric: str) -> float:
    labels = {"scope": scope, "metric": metric}
    return REGISTRY.get_sample_value("slack_agent_budget_refusals_total", labels) or 0.0


async def alice_spent(budgets: Budgets) -> Spend:
    _, day = budgets.today()
    return (await budgets.ledger.spent("T1", day, ["user:U0ALICE"]))[0]


async def test_a_call_is_settled_with_the_usage_the_server_reports(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("hi", usage=(20, 10)))
    model = make_model()
    budgets = budgets_on(state, model)
    guarded = budgets.guard(model, ALICE)
    response = await guarded.complete(HELLO, [])
    assert response.text == "hi"
    spend = await alice_spent(budgets)
    assert (spend.tokens, spend.held_tokens) == (30, 0)
    assert spend.cost == 40_000  # (20 x 1 + 10 x 2) per million: 0.00004, in billionths
    # The estimate held while it ran: the prompt as the estimator counts it, plus max_tokens.
    assert spend.peak_tokens == model.estimator.tokens(HELLO) + 100


async def test_over_the_limit_the_model_is_not_called_and_the_refusal_is_recorded(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("hi", usage=(900, 150)))
    model = make_model()
    budgets = budgets_on(state, model)
    guarded = budgets.guard(model, ALICE)
    await guarded.complete(HELLO, [])
    before = refusals("role", "tokens")
    with pytest.raises(OverBudget) as caught:
        await guarded.complete(HELLO, [])
    assert len(fake_llm.requests) == 1  # the second call never reached the server
    assert caught.value.kind == "budget"
    assert caught.value.user_message == (
        "Sorry, I can't answer this now: the daily limit of 1,000 tokens that the role "
        "*member* gives each person is reached (1,050 tokens used today). "
        f"It resets at 00:00 UTC on {TOMORROW + timedelta(days=1)}, in 12 h 0 min."
    )
    assert refusals("role", "tokens") == before + 1
    entry = (await state.shared.audit.latest(1))[0]
    assert (entry.kind, entry.actor, entry.action, entry.target, entry.outcome) == (
        "budget",
        "U0ALICE",
        "model call",
        "role member",
        "refused",
    )
    assert entry.detail["spent"] == 1050 and entry.detail["thread"] == "171.000001"


async def test_the_first_call_of_a_turn_refused_ends_the_turn_with_the_plain_words(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    model = make_model()
    config = BudgetsConfig(users={"U0ALICE": Budget(daily_cost_usd=0.5)})
    budgets = budgets_on(state, model, config)
    _, day = budgets.today()
    # Spent earlier today: 0.60 (in billionths).
    await state.client.hset(state.keys.budget("T1", day.stamp, "user:U0ALICE"), "cost", 6 * 10**8)
    result = await run_turn(
        budgets.guard(model, ALICE), LoopSettings(system_prompt="s"), [], "hi", StaticToolset([])
    )
    assert result.stop_reason == StopReason.FAILED
    assert result.text.startswith(
        "Sorry, I can't answer this now: your daily limit of $0.50 is reached ($0.60 used today)."
    )
    assert fake_llm.requests == []


async def test_a_failed_call_releases_its_hold(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(error(500))
    model = make_model(max_retries=0)
    budgets = budgets_on(state, model)
    with pytest.raises(LLMError):
        await budgets.guard(model, ALICE).complete(HELLO, [])
    spend = await alice_spent(budgets)
    assert (spend.tokens, spend.held_tokens) == (0, 0)


async def test_a_call_stopped_mid_stream_counts_what_streamed(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("x" * 400, text_piece=40, chunk_delay_s=0.05))
    model = make_model()
    budgets = budgets_on(state, model)
    streamed: list[str] = []

    async def sink(piece: str) -> None:
        streamed.append(piece)

    call = asyncio.create_task(budgets.guard(model, ALICE).complete(HELLO, [], on_text=sink))
    await until(lambda: len(streamed) >= 3)  # a few chunks in, the person stops it
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    spend = await alice_spent(budgets)
    assert spend.held_tokens == 0
    chars = sum(map(len, streamed))
    assert spend.tokens == model.estimator.tokens(HELLO) + model.estimator.chars_tokens(chars)


async def test_the_limit_resets_when_the_day_changes(
    state: State, fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("one", usage=(900, 150)), text("two", usage=(10, 5)))
    model = make_model()
    # 14:50 UTC is 23:50 in Tokyo; midnight in Tokyo (UTC+9, no daylight saving) is 15:00 UTC.
    clock = MovableClock(NOON.replace(hour=14, minute=50))
    config = BudgetsConfig(timezone="Asia/Tokyo")
    budgets = budgets_on(state, model, config, clock)
    guarded = budgets.guard(model, ALICE)
    await guarded.complete(HELLO, [])
    with pytest.raises(OverBudget) as caught:
        await guarded.complete(HELLO, [])
    tokyo_tomorrow = TOMORROW + timedelta(days=1)
    expected = f"It resets at 00:00 Asia/Tokyo on {tokyo_tomorrow}, in 10 min."
    assert expected in caught.value.user_message
    clock.move(timedelta(minutes=10))  # 15:00 UTC: a new day in Tokyo
    assert (await guarded.complete(HELLO, [])).text == "two"
    spend = await alice_spent(budgets)
    assert spend.tokens == 15  # the new day's counter
    clock.move(timedelta(minutes=-1))  # the day before still holds what it spent
    assert (await alice_spent(budgets)).tokens == 1050
