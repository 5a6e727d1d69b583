"""Per-thread history in Redis: one list element per turn, capped, expiring when idle."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.llm.tokens import TokenEstimator
from bot.state.redis.commands import Commands
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.thread_key import ThreadKey

Message = dict[str, Any]
TurnMessages = list[Message]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredTurn:
    """One stored turn as the model may see it, and who asked it (the turn's user id; None
    when it was stored before the requester was kept)."""

    messages: TurnMessages
    user: str | None = None


# A stored thread as the model may show it to this turn's requester, turn for turn
# (permissions/withholding.py's requester_scope).
Scope = Callable[[Sequence[StoredTurn]], Awaitable[list[TurnMessages]]]

# Append one turn, then drop the oldest turns while over the turn or byte cap (never the
# newest), and refresh the idle expiry. Atomic: a reader sees the turn whole or not at all.
# A function, so the fenced turn transitions (bot/turn/store/records.py) can run it in their step.
APPEND_FUNCTION = """
local function append_history(list_key, bytes_key, payload, max_turns, max_bytes, ttl)
  redis.call('RPUSH', list_key, payload)
  local total = redis.call('INCRBY', bytes_key, string.len(payload))
  local count = redis.call('LLEN', list_key)
  while count > 1 and (count > max_turns or total > max_bytes) do
    local dropped = redis.call('LPOP', list_key)
    total = redis.call('DECRBY', bytes_key, string.len(dropped))
    count = count - 1
  end
  redis.call('EXPIRE', list_key, ttl)
  redis.call('EXPIRE', bytes_key, ttl)
  return count
end
"""
APPEND = (
    APPEND_FUNCTION
    + "return append_history(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), "
    + "ARGV[4])"
)

UNDELIVERED = (
    "(My answer to this message never reached the person: Slack did not take it. They have "
    "not seen it.)"
)


def for_model(messages: TurnMessages, delivered: bool) -> TurnMessages:
    """A stored turn as the model may see it: an answer the person never saw is not shown
    to the model as its own words."""
    if delivered:
        return messages
    shown = list(messages)
    last = shown[-1] if shown else {}
    if last.get("role") == "assistant" and not last.get("tool_calls"):
        shown[-1] = {"role": "assistant", "content": UNDELIVERED}
    else:
        shown.append({"role": "assistant", "content": UNDELIVERED})
    return shown


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

    def _entry(self, messages: Sequence[Message], turn: str, delivered: bool, user: str) -> str:
        entry = {"turn": turn, "delivered": delivered, "user": user, "messages": list(messages)}
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)

    async def append(
        self,
        thread: ThreadKey,
        messages: Sequence[Message],
        *,
        user: str,
        turn: str = "",
        delivered: bool = True,
    ) -> None:
        """Store one turn's messages, asked by ``user``, marked as shown to them or not."""
        keys = [self.keys.history(thread), self.keys.history_bytes(thread)]
        args = [self._entry(messages, turn, delivered, user), self.max_turns, self.max_bytes]
        await self._append(keys=keys, args=[*args, self.idle_ttl_s])

    def append_to(
        self,
        commands: Commands,
        thread: ThreadKey,
        messages: Sequence[Message],
        *,
        turn: str,
        delivered: bool,
        user: str,
    ) -> None:
        """Queue the append on a fenced turn transition."""
        commands.special(
            "__history",
            self.keys.history(thread),
            self.keys.history_bytes(thread),
            self._entry(messages, turn, delivered, user),
            self.max_turns,
            self.max_bytes,
            self.idle_ttl_s,
        )

    async def has_turns(self, thread: ThreadKey) -> bool:
        """Whether anything of ``thread`` is stored."""
        return bool(await self.client.exists(self.keys.history(thread)))

    async def load_turns(self, thread: ThreadKey) -> list[TurnMessages]:
        """Every stored turn's messages, oldest first, as the model may see them."""
        return [turn.messages for turn in await self.stored_turns(thread)]

    async def stored_turns(self, thread: ThreadKey) -> list[StoredTurn]:
        """Every stored turn, oldest first, as the model may see it, with who asked it.
        Reading counts as use: the expiry is refreshed."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.lrange(self.keys.history(thread), 0, -1)
            pipe.expire(self.keys.history(thread), self.idle_ttl_s)
            pipe.expire(self.keys.history_bytes(thread), self.idle_ttl_s)
            raw, _, _ = await pipe.execute()
        return self.parse_turns(thread, raw)

    async def turn_messages(self, thread: ThreadKey, turn: str) -> TurnMessages | None:
        """The messages stored for the turn ``turn`` (its entry id) as they were stored,
        None when the thread's history does not hold it (not finished yet, or dropped).
        Not a use of the thread: the expiry stays as it is."""
        for item in reversed(await self.client.lrange(self.keys.history(thread), 0, -1)):
            try:
                entry = json.loads(item)
            except ValueError:
                continue
            if isinstance(entry, dict) and turn and entry.get("turn") == turn:
                messages = entry.get("messages")
                return list(messages) if isinstance(messages, list) else None
        return None

    @staticmethod
    def parse_turns(thread: ThreadKey, raw: Sequence[str]) -> list[StoredTurn]:
        """The stored turns ``raw`` (the history list's items, as read), oldest first."""
        turns = []
        for number, item in enumerate(raw):
            try:
                entry = json.loads(item)
            except ValueError:
                log.warning("skipping unreadable turn %d of %s", number, thread)
                continue
            if isinstance(entry, list):  # stored before turns carried a delivered mark
                turns.append(StoredTurn(entry))
            elif isinstance(entry, dict) and isinstance(entry.get("messages"), list):
                messages = for_model(entry["messages"], bool(entry.get("delivered", True)))
                user = entry.get("user")  # absent: stored before the requester was kept
                turns.append(StoredTurn(messages, user if isinstance(user, str) else None))
        return turns

    async def for_model(
        self,
        thread: ThreadKey,
        budget: int,
        estimator: TokenEstimator,
        scope: Scope,
        stored: Sequence[str] | None = None,
    ) -> list[Message]:
        """The stored turns as ``scope`` shows them to this turn's requester, the newest
        whole ones that fit ``budget`` tokens, flattened. ``stored``: the history's items
        as already read (the turn's begin reads them), else they are read now."""
        turns_read = (
            self.parse_turns(thread, stored)
            if stored is not None
            else await self.stored_turns(thread)
        )
        shown = await scope(turns_read)
        turns = fit_turns(shown, budget, estimator)
        return [message for turn in turns for message in turn]
