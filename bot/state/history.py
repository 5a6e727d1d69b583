"""Per-thread history in Redis: one list element per turn, capped, expiring when idle."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from bot.llm.tokens import TokenEstimator
from bot.state.connection import Redis
from bot.state.keys import Keys
from bot.turn import ThreadKey

Message = dict[str, Any]
TurnMessages = list[Message]

log = logging.getLogger(__name__)

# Append one turn, then drop the oldest turns while over the turn or byte cap (never the
# newest), and refresh the idle expiry. Atomic: a reader sees the turn whole or not at all.
APPEND = """
redis.call('RPUSH', KEYS[1], ARGV[1])
local total = redis.call('INCRBY', KEYS[2], string.len(ARGV[1]))
local count = redis.call('LLEN', KEYS[1])
while count > 1 and (count > tonumber(ARGV[2]) or total > tonumber(ARGV[3])) do
  local dropped = redis.call('LPOP', KEYS[1])
  total = redis.call('DECRBY', KEYS[2], string.len(dropped))
  count = count - 1
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return count
"""


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


class RedisHistory:
    def __init__(
        self,
        client: Redis,
        keys: Keys,
        *,
        idle_ttl_s: int,
        max_turns: int,
        max_bytes: int,
    ) -> None:
        self.client = client
        self.keys = keys
        self.idle_ttl_s = idle_ttl_s
        self.max_turns = max_turns
        self.max_bytes = max_bytes
        self._append = client.register_script(APPEND)

    async def append(
        self, thread: ThreadKey, messages: Sequence[Message], pipe: Any = None
    ) -> None:
        """Store one turn. Given ``pipe`` (a transaction), the append is queued on it."""
        payload = json.dumps(list(messages), separators=(",", ":"), ensure_ascii=False)
        keys = [self.keys.history(thread), self.keys.history_bytes(thread)]
        args = [payload, self.max_turns, self.max_bytes, self.idle_ttl_s]
        if pipe is not None:
            # EVAL, not EVALSHA: a pipeline would first ask SCRIPT EXISTS, a round trip more.
            pipe.eval(APPEND, len(keys), *keys, *args)
            return
        await self._append(keys=keys, args=args)

    async def load_turns(self, thread: ThreadKey) -> list[TurnMessages]:
        """Every stored turn, oldest first. Reading counts as use: the expiry is refreshed."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.lrange(self.keys.history(thread), 0, -1)
            pipe.expire(self.keys.history(thread), self.idle_ttl_s)
            pipe.expire(self.keys.history_bytes(thread), self.idle_ttl_s)
            raw, _, _ = await pipe.execute()
        turns = []
        for number, item in enumerate(raw):
            try:
                turn = json.loads(item)
            except ValueError:
                log.warning("skipping unreadable turn %d of %s", number, thread)
                continue
            if isinstance(turn, list):
                turns.append(turn)
        return turns

    async def for_model(
        self, thread: ThreadKey, budget: int, estimator: TokenEstimator
    ) -> list[Message]:
        """The newest whole turns that fit ``budget`` tokens, flattened."""
        turns = fit_turns(await self.load_turns(thread), budget, estimator)
        return [message for turn in turns for message in turn]
