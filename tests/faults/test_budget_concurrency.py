"""A spending limit under concurrency: 20 turns at once on 2 ``slack-agent run`` processes
(one private Redis, events delivered as Slack does), all against one person's daily limit.
Every model call is reserved against the limit in one Redis step before it is made, so the
limit is passed by at most one call's estimate; the overshoot is measured and printed."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import aiohttp
import pytest

from bot.budget.clock import budget_day
from bot.budget.ledger import BudgetLedger, Spend
from bot.llm.tokens import TokenEstimator
from bot.state.redis.keys import Keys
from tests.fakes.llm_server import Reply, Request
from tests.faults.app_config import PREFIX
from tests.faults.replicas import Replica
from tests.faults.router import PERSON, Sent
from tests.faults.scenarios import ClusterFactory
from tests.faults.script import Plan, Step
from tests.waiting import until, until_true

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]

TURNS = 20
# Alice's daily tokens: every turn's first call fits (20 x about 400 tokens), and the second
# calls, all reserved at about the same moment, race for what is left.
LIMIT = 10_000
MAX_TOKENS = 100  # llm.max_tokens: each call's estimate allows this much answer
ANSWER_TOKENS = 80  # what the fake model's answers take (within the allowance)
REFUSED = "Sorry, I can't answer this now: your daily limit of 10,000 tokens is reached"


def prompt_tokens(request: Request) -> int:
    """The prompt as the server counts it: the way the bot's estimator does (4 characters
    a token), so its estimates stay on the mark."""
    estimator = TokenEstimator()
    tools = request.get("tools") or []
    return estimator.tokens(request["messages"]) + estimator.chars_tokens(
        len(json.dumps(tools)) if tools else 0
    )


def finished(cluster_messages: list[tuple[str, str]], sent: Sent) -> str | None:
    """The turn's final answer in its thread: the model's, or the refusal."""
    for thread_ts, shown in cluster_messages:
        if thread_ts == sent.thread_ts and (
            sent.question.answer in shown or shown.startswith(REFUSED)
        ):
            return shown
    return None


async def metric(replica: Replica, name: str) -> float:
    """The sum of a counter's series on one process's /metrics."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{replica.metrics_port}/metrics") as response,
    ):
        text = await response.text()
    pattern = re.compile(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+]+)$", re.MULTILINE)
    return sum(float(value) for value in pattern.findall(text))


async def test_20_concurrent_turns_on_2_processes_pass_the_limit_by_at_most_one_estimate(
    clusters: ClusterFactory,
    capsys: pytest.CaptureFixture[str],
    record_property: Callable[[str, object], None],
) -> None:
    # Each turn: a tool step, then the answer; every reply takes 0.3 s, so the calls overlap.
    cluster = clusters(
        "budget",
        replicas=2,
        duplicates=0.0,
        plan=lambda question: Plan(steps=(Step(0.2),), delay_s=0.3),
        config={
            "llm": {"max_tokens": MAX_TOKENS},
            "queue": {"concurrency": TURNS // 2},  # 20 at once needs both processes
            "budgets": {"users": {PERSON: {"daily_tokens": LIMIT}}},
        },
    )
    served: list[int] = []  # the tokens of every call the model answered
    script = cluster.answers

    def answer(request: Request) -> Reply:
        usage = (prompt_tokens(request), ANSWER_TOKENS)
        served.append(sum(usage))
        return dataclasses.replace(script(request), usage=usage)

    cluster.llm.otherwise = answer
    async with cluster:
        sent = [cluster.write(f"t{number}") for number in range(1, TURNS + 1)]

        def shown() -> list[tuple[str, str]]:
            return [
                (m.thread_ts or m.ts, m.shown)
                for m in cluster.slack.messages.values()
                if not m.streaming
            ]

        await until(lambda: all(finished(shown(), s) for s in sent), 40)
        ledger = BudgetLedger(cluster.client(), Keys(PREFIX))
        day = budget_day(datetime.now(UTC), ZoneInfo("UTC"))
        spend = Spend()

        async def settled() -> bool:
            nonlocal spend
            [spend] = await ledger.spent("T0TEAM", day, [f"user:{PERSON}"])
            return spend.held_tokens == 0 and spend.tokens == sum(served)

        await until_true(settled, 10)
        answers = {s.question: finished(shown(), s) or "" for s in sent}
        refused = [q for q, text in answers.items() if text.startswith(REFUSED)]
        calls = {q: len(script.calls_for(q)) for q in answers}
        per_process = [
            (
                await metric(replica, "slack_agent_model_calls_total"),
                await metric(replica, "slack_agent_budget_refusals_total"),
            )
            for replica in cluster.replicas
        ]

    # Past the limit at the busiest moment (spent + held by calls under way), and at the end.
    committed, final = spend.peak_spent - LIMIT, spend.tokens - LIMIT
    bound = spend.peak_tokens  # the largest estimate held: one call's
    with capsys.disabled():
        print(
            f"\nbudget under concurrency: {TURNS} turns on 2 processes against a limit of "
            f"{LIMIT:,} tokens: overshoot {committed:+,} tokens at the peak (spent + held), "
            f"{final:+,} at the end ({spend.tokens:,} spent in {len(served)} model calls); "
            f"bound: one call's estimate, at most {bound:,}; {len(refused)} turns refused; "
            f"per process (model calls, refusals): {per_process}"
        )
    record_property("budget_overshoot_peak_tokens", committed)
    record_property("budget_overshoot_final_tokens", final)
    record_property("budget_bound_tokens", bound)

    assert committed >= 0, "the calls did not race for the limit"
    assert committed <= bound and final <= bound, "passed by more than one call's estimate"
    assert spend.tokens >= LIMIT - spend.peak_tokens  # nearly all of it could be used
    assert refused and len(refused) < TURNS
    # A refused turn was stopped before the call that would have passed the limit.
    assert all(calls[q] < 2 for q in refused)
    assert all(calls[q] == 2 for q in answers if q not in refused)
    # Both processes ran turns, and the refusals were counted.
    assert all(model_calls + refusals > 0 for model_calls, refusals in per_process)
    assert sum(refusals for _, refusals in per_process) >= len(refused)
