"""The turn state machine's moves (pure)."""

from __future__ import annotations

import itertools

import pytest

from bot.agent.result import StopReason
from bot.turn.states import (
    SETTLED,
    TERMINAL,
    TRANSITIONS,
    TurnState,
    settled_state,
    sources,
)


def reachable(start: TurnState) -> set[TurnState]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in TRANSITIONS[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_every_state_is_reachable_from_queued_and_every_path_ends() -> None:
    assert reachable(TurnState.QUEUED) == set(TurnState)
    for state in TurnState:
        assert reachable(state) & TERMINAL, state
    for state in TERMINAL:
        assert TRANSITIONS[state] == frozenset()


def test_the_happy_path_and_the_side_exits() -> None:
    path = [
        TurnState.QUEUED,
        TurnState.RUNNING,
        TurnState.ANSWERED,
        TurnState.DONE,
    ]
    for here, there in itertools.pairwise(path):
        assert there in TRANSITIONS[here]
    for settled in SETTLED:
        assert TRANSITIONS[settled] == {
            TurnState.DONE,
            TurnState.DELIVERED,  # as earlier builds did, then done
            TurnState.DEAD_LETTERED,
        }
    # Nothing is delivered before the loop settled it, and nothing goes back to the queue.
    assert sources(TurnState.DELIVERED) == SETTLED
    assert sources(TurnState.DONE) == {*SETTLED, TurnState.DELIVERED}
    assert sources(TurnState.QUEUED) == frozenset()
    assert TurnState.DEAD_LETTERED in TRANSITIONS[TurnState.QUEUED]
    assert TurnState.DEAD_LETTERED not in TRANSITIONS[TurnState.DELIVERED]


def test_where_a_finished_loop_leaves_the_turn() -> None:
    assert settled_state(StopReason.ANSWERED) is TurnState.ANSWERED
    assert settled_state(StopReason.ROUND_LIMIT) is TurnState.ANSWERED
    assert settled_state(StopReason.FAILED) is TurnState.FAILED
    assert settled_state(StopReason.CANCELLED) is TurnState.CANCELLED
    with pytest.raises(ValueError, match="not settled"):
        settled_state(StopReason.PARKED)


def test_a_parked_turn_holds_nothing_and_goes_back_to_running() -> None:
    parked = TurnState.AWAITING_APPROVAL
    assert parked in TRANSITIONS[TurnState.RUNNING]
    assert TRANSITIONS[parked] == {parked, TurnState.RUNNING, TurnState.DEAD_LETTERED}
    assert parked not in SETTLED and parked not in TERMINAL
