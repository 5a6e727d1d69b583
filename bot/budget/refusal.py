"""A model call refused because a limit is reached: an :class:`LLMError` of kind ``budget``,
so the loop ends the turn with its plain words (which limit, how much is used of it, when
it resets) before the model is called."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.budget.clock import BudgetDay
from bot.budget.limits import Limit
from bot.budget.wording import amount, limit_words, reset
from bot.llm.errors import LLMError


@dataclass(frozen=True)
class Refusal:
    limit: Limit  # the one reached (the tightest that applies)
    spent: float  # tokens, or cost: settled and held by calls under way
    day: BudgetDay
    now: datetime

    def text(self) -> str:
        used = amount(self.limit.metric, self.spent)
        return (
            f"Sorry, I can't answer this now: {limit_words(self.limit)} is reached ({used} "
            f"used today). It resets at {reset(self.day, self.now)}."
        )


class OverBudget(LLMError):
    def __init__(self, refusal: Refusal) -> None:
        limit = refusal.limit
        super().__init__(
            "budget",
            f"{limit.source} daily {limit.metric} limit {limit.amount} reached "
            f"({refusal.spent} spent on {refusal.day.stamp})",
        )
        self.refusal = refusal

    @property
    def user_message(self) -> str:
        return self.refusal.text()
