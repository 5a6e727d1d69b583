"""Tokens and cost per person per day (UTC), kept for 40 days."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from bot.llm.usage import Usage
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys

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


@dataclass(frozen=True)
class PersonUsage:
    """One person's usage on the last day of a report, and over all its days."""

    user: str
    last_day: UsageTotals
    all_days: UsageTotals


# Everyone who used the bot on the given days, each with their counters per day: one round
# trip for `/agent usage`, however many people and days.
# KEYS: the per-day user sets; ARGV[1]: the usage key prefix for the team, ARGV[2..]: days
REPORT = """
local users = redis.call('SUNION', unpack(KEYS))
local report = {}
for _, user in ipairs(users) do
  local days = {}
  for i = 2, #ARGV do
    table.insert(days, redis.call('HGETALL', ARGV[1] .. ARGV[i] .. ':' .. user))
  end
  table.insert(report, {user, days})
end
return report
"""


def _totals(flat: list[str]) -> UsageTotals:
    raw = dict(zip(flat[::2], flat[1::2], strict=True))
    return UsageTotals(
        int(raw.get("turns", 0)),
        int(raw.get("prompt_tokens", 0)),
        int(raw.get("completion_tokens", 0)),
        float(raw.get("cost", 0.0)),
    )


class UsageCounters:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._report = client.register_script(REPORT)

    async def record(
        self,
        team: str,
        user: str,
        usage: Usage,
        cost: float | None,
        day: date | None = None,
        *,
        turns: int = 1,
    ) -> None:
        """Count ``usage``; ``turns=0`` for tokens spent outside a turn's own model calls
        (an MCP server's sampling request)."""
        async with self.client.pipeline(transaction=True) as pipe:
            self.add_to(pipe, self.keys.team_shard(team), team, user, usage, cost, day, turns=turns)
            await pipe.execute()

    def add_to(
        self,
        pipe: Any,
        shard: int,
        team: str,
        user: str,
        usage: Usage,
        cost: float | None,
        day: date | None = None,
        *,
        turns: int = 1,
    ) -> None:
        """Queue one turn's usage on a pipeline or transaction, in ``shard`` (the turn's:
        readers add the shards up)."""
        stamp = (day or today()).isoformat()
        key = self.keys.usage(shard, team, user, stamp)
        pipe.hincrby(key, "turns", turns)
        pipe.hincrby(key, "prompt_tokens", usage.prompt_tokens)
        pipe.hincrby(key, "completion_tokens", usage.completion_tokens)
        if cost:
            pipe.hincrbyfloat(key, "cost", cost)
        pipe.expire(key, KEEP_S)
        pipe.sadd(self.keys.usage_users(shard, team, stamp), user)
        pipe.expire(self.keys.usage_users(shard, team, stamp), KEEP_S)

    async def totals(
        self, team: str, user: str, days: int = 1, until: date | None = None
    ) -> UsageTotals:
        """The sum over the ``days`` days ending ``until`` (default today)."""
        return (await self.person(team, user, days, until)).all_days

    async def person(
        self, team: str, user: str, days: int, until: date | None = None
    ) -> PersonUsage:
        """One person's last day and whole period (one round trip)."""
        stamps = _stamps(days, until)
        shards = self.keys.shards.all()
        async with self.client.pipeline(transaction=False) as pipe:
            for shard in shards:
                for stamp in stamps:
                    pipe.hgetall(self.keys.usage(shard, team, user, stamp))
            raw = await pipe.execute()
        per_day = [UsageTotals() for _ in stamps]
        for index, day in enumerate(raw):
            per_day[index % len(stamps)] += _totals([part for item in day.items() for part in item])
        return PersonUsage(user, per_day[0], sum(per_day, UsageTotals()))

    async def report(self, team: str, days: int, until: date | None = None) -> list[PersonUsage]:
        """Everyone who used the bot in the ``days`` days ending ``until``, with their last
        day and their whole period (one round trip)."""
        stamps = _stamps(days, until)
        replies = await asyncio.gather(
            *(
                self._report(
                    keys=[self.keys.usage_users(shard, team, stamp) for stamp in stamps],
                    args=[self.keys.usage_prefix(shard, team), *stamps],
                )
                for shard in self.keys.shards.all()
            )
        )
        people: dict[str, list[UsageTotals]] = {}
        for raw in replies:
            for user, per_day in raw:
                totals = people.setdefault(str(user), [UsageTotals() for _ in stamps])
                for index, day in enumerate(per_day):
                    totals[index] += _totals(day)
        return [
            PersonUsage(user, totals[0], sum(totals, UsageTotals()))
            for user, totals in people.items()
        ]

    async def users(self, team: str, days: int = 1, until: date | None = None) -> list[str]:
        return sorted(person.user for person in await self.report(team, days, until))


def _stamps(days: int, until: date | None) -> list[str]:
    """The days ending ``until`` (default today), newest first."""
    last = until or today()
    return [(last - timedelta(days=offset)).isoformat() for offset in range(days)]
