"""Trimming to a token budget: property tests over random histories."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.agent.messages import repair
from bot.llm.tokens import TokenEstimator
from bot.turn.store.history import fit_turns

pytestmark = pytest.mark.cluster  # on a single Redis and on a Redis Cluster (it touches neither)

ESTIMATOR = TokenEstimator()


@st.composite
def a_turn(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A user message, zero or more tool rounds (calls and their results), an answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "u" * draw(st.integers(0, 400))}]
    for round_number in range(draw(st.integers(0, 3))):
        ids = [f"r{round_number}c{i}" for i in range(draw(st.integers(1, 3)))]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}
                    for i in ids
                ],
            }
        )
        for call_id in ids:
            size = draw(st.integers(0, 2000))
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "t" * size})
    messages.append({"role": "assistant", "content": "a" * draw(st.integers(0, 300))})
    return messages


@given(st.lists(a_turn(), min_size=1, max_size=12), st.integers(0, 5000))
def test_trimming_keeps_whole_turns(turns: list[list[dict[str, Any]]], budget: int) -> None:
    kept = fit_turns(turns, budget, ESTIMATOR)
    flat = [m for turn in kept for m in turn]

    # The newest turn is always kept, and what is kept is a run of the newest turns.
    assert kept and kept[-1] is turns[-1]
    assert kept == turns[len(turns) - len(kept) :]
    # Within the budget, unless the newest turn alone is larger.
    if len(kept) > 1:
        assert sum(ESTIMATOR.tokens(t) for t in kept) <= budget
    # No orphan tool result and no unanswered call: repair has nothing to change.
    assert repair(flat) == flat
    calls = {c["id"] for m in flat for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"] for m in flat if m["role"] == "tool"}
    assert calls == results
    # As many turns as fit: the next older one would not have.
    if len(kept) < len(turns):
        older = turns[len(turns) - len(kept) - 1]
        assert sum(ESTIMATOR.tokens(t) for t in kept) + ESTIMATOR.tokens(older) > budget
