"""Fit a conversation to a token budget, whole turns at a time, newest first."""

from __future__ import annotations

from collections.abc import Sequence

from bot.history.store import TurnMessages
from bot.llm.tokens import TokenEstimator


def fit_turns(
    turns: Sequence[TurnMessages], budget: int, estimator: TokenEstimator
) -> list[TurnMessages]:
    """The newest turns whose estimated tokens fit ``budget``; the newest turn always stays.

    Turns are never split, so a tool call is never separated from its result.
    """
    kept: list[TurnMessages] = []
    used = 0
    for turn in reversed(turns):
        cost = estimator.tokens(turn)
        if kept and used + cost > budget:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    return kept
