"""The Redis ledger: a call reserved against several limits in one step (all or none),
settled with its real usage, released when it failed, a dead call's hold counted at its
estimate, and the day's counters expiring a couple of days after the day."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from bot.budget.clock import budget_day
from bot.budget.ledger import Check, Reached, Spend
from bot.process.state import State

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

DAY = budget_day(datetime.now(UTC), ZoneInfo("UTC"))
ALICE, WORKSPACE = "user:U0ALICE", "workspace"
# Alice's role allows 1,000 tokens, her own limit 800; the workspace 1,500 tokens and 5 units.
CHECKS = [
    Check(ALICE, "tokens", 800),
    Check(ALICE, "tokens", 1000),
    Check(WORKSPACE, "cost", 5),
    Check(WORKSPACE, "tokens", 1500),
]


async def reserve(
    state: State, call: str, tokens: int, cost: int = 0, checks: list[Check] = CHECKS, **kw: float
) -> Reached | None:
    now = kw.get("now", time.time())
    hold_s = kw.get("hold_s", 600)
    return await state.budgets.reserve(
        "T1", DAY, call, checks, tokens, cost, now=now, hold_s=hold_s
    )


async def spent(state: State, *counters: str) -> list[Spend]:
    return await state.budgets.spent("T1", DAY, list(counters))


async def test_a_call_is_held_in_every_counter_then_settled(state: State) -> None:
    assert await reserve(state, "c1", 300, 2) is None
    alice, workspace = await spent(state, ALICE, WORKSPACE)
    assert alice == Spend(held_tokens=300, held_cost=2, peak_tokens=300, peak_spent=300)
    assert workspace == alice
    await state.budgets.settle("T1", DAY, "c1", [ALICE, WORKSPACE], 120, 1)
    alice, workspace = await spent(state, ALICE, WORKSPACE)
    assert alice == Spend(tokens=120, cost=1, peak_tokens=300, peak_spent=300)
    assert workspace == alice


async def test_settling_twice_counts_once(state: State) -> None:
    await reserve(state, "c1", 300)
    for _ in range(2):  # a reply lost and the step sent again
        await state.budgets.settle("T1", DAY, "c1", [ALICE, WORKSPACE], 120, 0)
    assert (await spent(state, ALICE))[0].tokens == 120


async def test_a_failed_call_is_released(state: State) -> None:
    await reserve(state, "c1", 300)
    await state.budgets.release("T1", DAY, "c1", [ALICE, WORKSPACE])
    assert await spent(state, ALICE, WORKSPACE) == [Spend(peak_tokens=300, peak_spent=300)] * 2


async def test_the_tightest_limit_reached_refuses_and_nothing_is_held(state: State) -> None:
    await reserve(state, "c1", 700)
    await state.budgets.settle("T1", DAY, "c1", [ALICE, WORKSPACE], 810, 0)
    # Alice's own 800 is reached (her role's 1,000 is not): refused, naming the first check.
    assert await reserve(state, "c2", 10) == Reached(check=0, spent=810)
    alice, workspace = await spent(state, ALICE, WORKSPACE)
    assert (alice.held_tokens, workspace.held_tokens) == (0, 0)  # held nowhere


async def test_a_shared_limit_refuses_everyone_and_holds_nothing_anywhere(state: State) -> None:
    bob = [Check("user:U0BOB", "tokens", 1000), Check(WORKSPACE, "tokens", 1500)]
    await reserve(state, "c1", 700)
    await reserve(state, "c2", 700, checks=bob)
    await reserve(state, "c3", 100)  # 1,400 held in the workspace: still under
    # Bob has 700 of his 1,000, but the workspace has reached 1,500 with his 700 held.
    assert await reserve(state, "c4", 100, checks=bob) == Reached(check=1, spent=1500)
    bob_spend, workspace = await spent(state, "user:U0BOB", WORKSPACE)
    assert bob_spend.held_tokens == 700 and workspace.held_tokens == 1500


async def test_a_limit_is_passed_by_at_most_the_last_call_admitted(state: State) -> None:
    checks = [Check(ALICE, "tokens", 1000)]
    admitted = 0
    for number in range(10):
        if await reserve(state, f"c{number}", 300, checks=checks) is None:
            admitted += 1
    # 0, 300, 600 and 900 are under 1,000: four holds, 1,200 in all, over by less than one.
    assert admitted == 4
    alice = (await spent(state, ALICE))[0]
    assert alice.held_tokens == alice.peak_spent == 1200


async def test_a_cost_limit(state: State) -> None:
    checks = [Check(WORKSPACE, "cost", 5)]
    assert await reserve(state, "c1", 1, cost=5, checks=checks) is None
    assert await reserve(state, "c2", 1, cost=1, checks=checks) == Reached(check=0, spent=5)


async def test_a_hold_never_settled_counts_at_its_estimate_after_its_deadline(
    state: State,
) -> None:
    now = time.time()
    await reserve(state, "dead", 400, now=now, hold_s=30)  # its process died
    # Before the deadline it is held; after it, the next reservation counts it as spent.
    assert (await spent(state, ALICE))[0].held_tokens == 400
    assert await reserve(state, "next", 100, now=now + 31) is None
    alice = (await spent(state, ALICE))[0]
    assert (alice.tokens, alice.held_tokens) == (400, 100)
    # Its settle arriving late changes nothing: it was counted already.
    await state.budgets.settle("T1", DAY, "dead", [ALICE, WORKSPACE], 50, 0)
    assert (await spent(state, ALICE))[0].tokens == 400


async def test_the_days_counters_expire_two_days_after_the_day(state: State) -> None:
    await reserve(state, "c1", 10)
    key = state.keys.budget("T1", DAY.stamp, ALICE)
    expected = DAY.expire_at - time.time()
    assert abs(await state.client.ttl(key) - expected) <= 2
    await state.budgets.settle("T1", DAY, "c1", [ALICE], 10, 0)
    assert abs(await state.client.ttl(key) - expected) <= 2
