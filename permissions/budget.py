"""A daily spending limit, as a role (``roles.NAME.budget``), a person and the workspace
(``budgets:``) give it in the config. Enforced by ``bot/budget/``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Budget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    daily_tokens: int | None = Field(
        default=None, gt=0, description="Prompt + completion tokens a day."
    )
    daily_cost_usd: float | None = Field(
        default=None, gt=0, description="Cost a day, in the currency of llm.prices."
    )

    @model_validator(mode="after")
    def _says_something(self) -> Budget:
        if self.daily_tokens is None and self.daily_cost_usd is None:
            raise ValueError("set daily_tokens, daily_cost_usd or both")
        return self
