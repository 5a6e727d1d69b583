"""What one model call may spend, said before it is made (pure): the prompt as the model's
token estimator counts it (messages and tool specs), plus the most the answer may take
(the call's cap, ``llm.max_tokens``, else an allowance), priced like real usage."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.llm.pricing import Price, cost_of
from bot.llm.tokens import TokenEstimator
from bot.llm.usage import Usage

# Tokens allowed for an answer when neither the call nor llm.max_tokens caps it. An answer
# may run longer; the overshoot of a limit is only bounded by the estimate when it is capped.
COMPLETION_ALLOWANCE = 1000


@dataclass(frozen=True)
class Estimate:
    usage: Usage
    cost: float | None  # None: the model has no price

    @property
    def tokens(self) -> int:
        return self.usage.prompt_tokens + self.usage.completion_tokens


@dataclass(frozen=True)
class CallEstimator:
    estimator: TokenEstimator  # the model's, which learns from the usage the server reports
    price: Price | None
    max_tokens: int | None = None  # llm.max_tokens

    def __call__(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        max_tokens: int | None = None,
    ) -> Estimate:
        tools_chars = len(json.dumps(list(tools))) if tools else 0
        prompt = self.estimator.tokens(messages) + self.estimator.chars_tokens(tools_chars)
        answer = max_tokens or self.max_tokens or COMPLETION_ALLOWANCE
        return self.priced(Usage(prompt, answer, requests=1, estimated=True))

    def cut_short(self, estimate: Estimate, streamed_chars: int) -> Estimate:
        """A call stopped while it streamed: its prompt, and the answer as far as it came."""
        answer = self.estimator.chars_tokens(streamed_chars)
        return self.priced(Usage(estimate.usage.prompt_tokens, answer, requests=1, estimated=True))

    def priced(self, usage: Usage) -> Estimate:
        return Estimate(usage, cost_of(usage, self.price))
