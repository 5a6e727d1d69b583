"""What is known about one queued turn while it is worked on: attempts, the saved messages
of the running turn (its journal), and whether its answer was stored and delivered."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.state.connection import Redis
from bot.state.keys import Keys

Message = dict[str, Any]
KEEP_S = 7 * 24 * 3600  # long enough to outlive any retry of the turn

ANSWERED = "answered"  # history written; the answer may not have reached the person yet


@dataclass(frozen=True)
class TurnState:
    attempts: int
    status: str  # "" while running, or ANSWERED
    answer: str
    saved: list[Message]  # the journal: what a crashed attempt had finished


class TurnProgress:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def begin_attempt(self, entry_id: str) -> TurnState:
        """Count one more attempt at the turn and return its state (one round trip)."""
        key = self.keys.turn_state(entry_id)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, "attempts", 1)
            pipe.hgetall(key)
            pipe.expire(key, KEEP_S)
            pipe.lrange(self.keys.journal(entry_id), 0, -1)
            _, data, _, saved = await pipe.execute()
        return TurnState(
            int(data.get("attempts", 1)),
            data.get("status", ""),
            data.get("answer", ""),
            [json.loads(item) for item in saved],
        )

    def journal(self, entry_id: str) -> RedisJournal:
        return RedisJournal(self.client, self.keys.journal(entry_id))

    def mark_answered(self, pipe: Any, entry_id: str, answer: str) -> None:
        """Queue, on a transaction: the answer is stored; the journal is no longer needed."""
        pipe.hset(self.keys.turn_state(entry_id), mapping={"status": ANSWERED, "answer": answer})
        pipe.expire(self.keys.turn_state(entry_id), KEEP_S)
        pipe.delete(self.keys.journal(entry_id))

    def forget(self, pipe: Any, entry_id: str) -> None:
        pipe.delete(self.keys.turn_state(entry_id), self.keys.journal(entry_id))


class RedisJournal:
    """A running turn's messages, saved one by one (see :mod:`bot.agent.journal`)."""

    def __init__(self, client: Redis, key: str) -> None:
        self.client = client
        self.key = key

    async def record(self, message: Message) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.rpush(self.key, json.dumps(message, separators=(",", ":"), ensure_ascii=False))
            pipe.expire(self.key, KEEP_S)
            await pipe.execute()
