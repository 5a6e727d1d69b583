"""What each budget counter has spent on a budget day, in Redis: one hash per counter and
day (``keys.budget``) with the settled ``tokens`` and ``cost`` and one ``hold:CALL`` field per
model call under way (its estimate and the moment it is presumed dead).

A call is reserved in one Lua step: every limit it is checked against is read (settled +
held), and unless one is already reached, the estimate is held in every counter at once
(all or none). So calls running at the same time on any number of replicas see each other's
holds, and a limit is passed by at most the last call admitted under it. Settling replaces
the hold with the real usage; a failed call's hold is dropped. A hold never settled (its
process died) is counted as spent at its estimate once its deadline passes. The day's
hashes expire a couple of days after the day ends.

Costs are kept as whole billionths (``COST_UNITS``), so sums are exact in Lua.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.budget.clock import BudgetDay
from bot.budget.limits import Metric
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys

COST_UNITS = 1_000_000_000  # a cost of 1 (USD) is kept as this many units

# Reads a counter (settled + held), first counting holds past their deadline as spent.
_COUNT = """
local function count(key, now)
  local flat = redis.call('HGETALL', key)
  local spent = {tokens = 0, cost = 0}
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    if field == 'tokens' or field == 'cost' then
      spent[field] = spent[field] + tonumber(value)
    elseif string.sub(field, 1, 5) == 'hold:' then
      local tokens, cost, deadline = string.match(value, '^(%S+) (%S+) (%S+)$')
      spent.tokens = spent.tokens + tonumber(tokens)
      spent.cost = spent.cost + tonumber(cost)
      if tonumber(deadline) < now then
        redis.call('HDEL', key, field)
        redis.call('HINCRBY', key, 'tokens', tokens)
        redis.call('HINCRBY', key, 'cost', cost)
      end
    end
  end
  return spent
end
"""

# KEYS: the counters; ARGV: call id, now, the hold's deadline, expire-at (epoch seconds),
# estimated tokens, estimated cost units, then for each limit: counter index, metric, amount.
# Returns {1} when held everywhere, {0, limit number (from 1), spent} when a limit is reached.
RESERVE = (
    _COUNT
    + """
local call, now, deadline, expire_at = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local tokens, cost = ARGV[5], ARGV[6]
local spent = {}
for i, key in ipairs(KEYS) do
  spent[i] = count(key, now)
end
for at = 7, #ARGV, 3 do
  local used = spent[tonumber(ARGV[at])][ARGV[at + 1]]
  if used >= tonumber(ARGV[at + 2]) then
    return {0, (at - 7) / 3 + 1, string.format('%.0f', used)}
  end
end
local function raise(key, field, value)
  if value > tonumber(redis.call('HGET', key, field) or '0') then
    redis.call('HSET', key, field, string.format('%.0f', value))
  end
end
for i, key in ipairs(KEYS) do
  redis.call('HSET', key, 'hold:' .. call, tokens .. ' ' .. cost .. ' ' .. deadline)
  raise(key, 'peak_tokens', tonumber(tokens))
  raise(key, 'peak_spent', spent[i].tokens + tonumber(tokens))
  redis.call('EXPIREAT', key, expire_at)
end
return {1}
"""
)

# KEYS: the counters the call was held in; ARGV: call id, tokens, cost units, expire-at.
# Where the hold still stands it is replaced by the usage; where it is gone (settled before,
# or already counted at its estimate) nothing changes, so settling twice counts once.
SETTLE = """
for _, key in ipairs(KEYS) do
  if redis.call('HDEL', key, 'hold:' .. ARGV[1]) == 1 then
    redis.call('HINCRBY', key, 'tokens', ARGV[2])
    redis.call('HINCRBY', key, 'cost', ARGV[3])
    redis.call('EXPIREAT', key, ARGV[4])
  end
end
return 1
"""


@dataclass(frozen=True)
class Check:
    """One limit a call is checked against: the counter it limits (``user:U1``,
    ``workspace``), the metric, and the amount (tokens, or cost units)."""

    counter: str
    metric: Metric
    amount: int


@dataclass(frozen=True)
class Reached:
    """The reservation was refused: ``check`` (its index in the checks) is reached."""

    check: int
    spent: int  # tokens, or cost units: settled and held


@dataclass(frozen=True)
class Spend:
    """One counter on one day: settled, and held by calls under way."""

    tokens: int = 0
    cost: int = 0
    held_tokens: int = 0
    held_cost: int = 0
    peak_tokens: int = 0  # the largest estimate held that day: the most it may overshoot
    peak_spent: int = 0  # the most tokens spent and held at once that day

    def of(self, metric: Metric) -> int:
        """Settled and held, of ``metric``."""
        return self.tokens + self.held_tokens if metric == "tokens" else self.cost + self.held_cost


def cost_units(cost: float | None) -> int:
    return round((cost or 0.0) * COST_UNITS)


class BudgetLedger:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._reserve = client.register_script(RESERVE)
        self._settle = client.register_script(SETTLE)

    def _keys(self, team: str, day: BudgetDay, counters: Sequence[str]) -> list[str]:
        return [self.keys.budget(team, day.stamp, counter) for counter in counters]

    async def reserve(
        self,
        team: str,
        day: BudgetDay,
        call: str,
        checks: Sequence[Check],
        tokens: int,
        cost: int,
        *,
        now: float,
        hold_s: float,
    ) -> Reached | None:
        """Hold ``tokens`` and ``cost`` for ``call`` in every counter ``checks`` name, unless
        one of them has reached its amount (then nothing is held)."""
        counters = list(dict.fromkeys(check.counter for check in checks))
        args: list[str | int | float] = [
            call,
            now,
            int(now + hold_s),
            day.expire_at,
            tokens,
            cost,
        ]
        for check in checks:
            args += [counters.index(check.counter) + 1, check.metric, check.amount]
        result = await self._reserve(keys=self._keys(team, day, counters), args=args)
        if int(result[0]) == 1:
            return None
        return Reached(int(result[1]) - 1, int(result[2]))

    async def settle(
        self,
        team: str,
        day: BudgetDay,
        call: str,
        counters: Sequence[str],
        tokens: int,
        cost: int,
    ) -> None:
        """Replace ``call``'s hold with what it really spent."""
        await self._settle(
            keys=self._keys(team, day, counters), args=[call, tokens, cost, day.expire_at]
        )

    async def release(self, team: str, day: BudgetDay, call: str, counters: Sequence[str]) -> None:
        """Drop ``call``'s hold: the call spent nothing."""
        await self.settle(team, day, call, counters, 0, 0)

    async def spent(self, team: str, day: BudgetDay, counters: Sequence[str]) -> list[Spend]:
        """Each counter's spend on ``day`` (one round trip)."""
        async with self.client.pipeline(transaction=False) as pipe:
            for key in self._keys(team, day, counters):
                pipe.hgetall(key)
            raw = await pipe.execute()
        return [_spend(fields) for fields in raw]


def _spend(fields: dict[str, str]) -> Spend:
    held_tokens = held_cost = 0
    for name, value in fields.items():
        if name.startswith("hold:"):
            tokens, cost, _ = value.split()
            held_tokens += int(tokens)
            held_cost += int(cost)
    return Spend(
        int(fields.get("tokens", 0)),
        int(fields.get("cost", 0)),
        held_tokens,
        held_cost,
        int(fields.get("peak_tokens", 0)),
        int(fields.get("peak_spent", 0)),
    )
