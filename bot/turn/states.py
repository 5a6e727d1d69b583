"""The turn state machine: a small closed set of states and the moves between them (pure).

```
                 ┌─► awaiting_approval ─┐ (parked: no lock, no worker; resumed on a decision)
                 │          ▲           │
queued ─► running(round n) ◄┴───────────┘
              │        │
              │        ├──► answered ─┐
              │        ├──► failed ───┼─► delivered ─► done
              │        └──► cancelled ┘
              └──────────────┴──────────────► dead_lettered
```

``answered``, ``failed`` and ``cancelled`` are *settled*: the loop has ended and what to show
the person is stored with the turn. Each of them still has to reach Slack (``delivered``)
before the queue forgets the turn (``done``). ``dead_lettered`` is the way out when a turn
cannot be finished (too many attempts) or delivered (Slack refused for too long).
``awaiting_approval``: calls of the turn wait for a person's decision; the turn holds no
lock and no worker meanwhile, and goes back to ``running`` once something was decided.

Every move is one atomic, fenced Redis step (:mod:`bot.turn.store.records`); this module only
says which moves exist.
"""

from __future__ import annotations

from enum import StrEnum

from bot.agent.result import StopReason


class TurnState(StrEnum):
    QUEUED = "queued"  # accepted from Slack; nobody has started it
    RUNNING = "running"  # an owner runs the loop (the record keeps the round)
    AWAITING_APPROVAL = "awaiting_approval"  # parked: calls wait for a person's decision
    ANSWERED = "answered"  # the model answered; the answer is stored
    FAILED = "failed"  # the model failed; a plain message for the person is stored
    CANCELLED = "cancelled"  # a person pressed Stop; a short note is stored
    DELIVERED = "delivered"  # Slack shows it; the history holds the turn
    DONE = "done"  # acknowledged: gone from the queue
    DEAD_LETTERED = "dead_lettered"  # given up; the person is told when Slack takes a post


SETTLED = frozenset({TurnState.ANSWERED, TurnState.FAILED, TurnState.CANCELLED})
TERMINAL = frozenset({TurnState.DONE, TurnState.DEAD_LETTERED})

TRANSITIONS: dict[TurnState, frozenset[TurnState]] = {
    TurnState.QUEUED: frozenset({TurnState.RUNNING, TurnState.DEAD_LETTERED}),
    # running -> running: a new round, or another owner resuming after a crash.
    TurnState.RUNNING: frozenset(
        {TurnState.RUNNING, TurnState.AWAITING_APPROVAL, *SETTLED, TurnState.DEAD_LETTERED},
    ),
    # awaiting -> awaiting: parked again (another call of the round still waits).
    TurnState.AWAITING_APPROVAL: frozenset(
        {TurnState.AWAITING_APPROVAL, TurnState.RUNNING, TurnState.DEAD_LETTERED}
    ),
    # settled -> done: delivered and acknowledged in one step. -> delivered -> done is how
    # earlier builds did it in two; a record left delivered by one is still carried on.
    TurnState.ANSWERED: frozenset({TurnState.DONE, TurnState.DELIVERED, TurnState.DEAD_LETTERED}),
    TurnState.FAILED: frozenset({TurnState.DONE, TurnState.DELIVERED, TurnState.DEAD_LETTERED}),
    TurnState.CANCELLED: frozenset({TurnState.DONE, TurnState.DELIVERED, TurnState.DEAD_LETTERED}),
    TurnState.DELIVERED: frozenset({TurnState.DONE}),
    TurnState.DONE: frozenset(),
    TurnState.DEAD_LETTERED: frozenset(),
}


def sources(target: TurnState) -> frozenset[TurnState]:
    """The states a turn may be in to move to ``target``."""
    return frozenset(state for state, targets in TRANSITIONS.items() if target in targets)


def settled_state(reason: StopReason) -> TurnState:
    """Where a finished loop leaves the turn (a parked loop has not finished)."""
    if reason is StopReason.PARKED:
        raise ValueError("a parked turn is not settled")
    if reason is StopReason.FAILED:
        return TurnState.FAILED
    if reason is StopReason.CANCELLED:
        return TurnState.CANCELLED
    return TurnState.ANSWERED
