"""Cost of a turn from an optional per-model price table (prices per million tokens)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.llm.usage import Usage


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0, description="Price per million prompt tokens.")
    output: float = Field(ge=0, description="Price per million completion tokens.")
    cached_input: float | None = Field(
        default=None, ge=0, description="Price per million cached prompt tokens (default: input)."
    )


def cost_of(usage: Usage, price: Price | None) -> float | None:
    """The cost in the price table's currency, or None when the model has no price."""
    if price is None:
        return None
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    total = (
        (usage.prompt_tokens - cached) * price.input
        + cached * cached_rate
        + usage.completion_tokens * price.output
    )
    return round(total / 1_000_000, 8)


def price_for(model: str, prices: dict[str, Price]) -> Price | None:
    """Exact name first, then the longest configured name the model name starts with."""
    if model in prices:
        return prices[model]
    matches = [name for name in prices if model.startswith(name)]
    return prices[max(matches, key=len)] if matches else None
