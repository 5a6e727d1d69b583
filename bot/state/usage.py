"""Tokens and cost per person per day (UTC), kept for 40 days."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from bot.llm.usage import Usage
from bot.state.connection import Redis
from bot.state.keys import Keys

KEEP_S = 40 * 24 * 3600


@dataclass(frozen=True)
class UsageTotals:
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.turns + other.turns,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost + other.cost,
        )


def today() -> date:
    return datetime.now(UTC).date()


class UsageCounters:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def record(
        self, team: str, user: str, usage: Usage, cost: float | None, day: date | None = None
    ) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            self.add_to(pipe, team, user, usage, cost, day)
            await pipe.execute()

    def add_to(
        self,
        pipe: Any,
        team: str,
        user: str,
        usage: Usage,
        cost: float | None,
        day: date | None = None,
    ) -> None:
        """Queue one turn's usage on a pipeline or transaction."""
        stamp = (day or today()).isoformat()
        key = self.keys.usage(team, user, stamp)
        pipe.hincrby(key, "turns", 1)
        pipe.hincrby(key, "prompt_tokens", usage.prompt_tokens)
        pipe.hincrby(key, "completion_tokens", usage.completion_tokens)
        if cost:
            pipe.hincrbyfloat(key, "cost", cost)
        pipe.expire(key, KEEP_S)
        pipe.sadd(self.keys.usage_users(team, stamp), user)
        pipe.expire(self.keys.usage_users(team, stamp), KEEP_S)

    async def totals(
        self, team: str, user: str, days: int = 1, until: date | None = None
    ) -> UsageTotals:
        """The sum over the ``days`` days ending ``until`` (default today)."""
        last = until or today()
        total = UsageTotals()
        for offset in range(days):
            stamp = (last - timedelta(days=offset)).isoformat()
            raw = await self.client.hgetall(self.keys.usage(team, user, stamp))
            total += UsageTotals(
                int(raw.get("turns", 0)),
                int(raw.get("prompt_tokens", 0)),
                int(raw.get("completion_tokens", 0)),
                float(raw.get("cost", 0.0)),
            )
        return total

    async def users(self, team: str, days: int = 1, until: date | None = None) -> list[str]:
        last = until or today()
        found: set[str] = set()
        for offset in range(days):
            stamp = (last - timedelta(days=offset)).isoformat()
            found |= set(await self.client.smembers(self.keys.usage_users(team, stamp)))
        return sorted(found)
