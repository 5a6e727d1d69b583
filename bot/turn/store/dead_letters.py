"""The turns given up (dead letters): one capped stream per shard, each letter the queue's
entry id, the turn as it was queued ("" when its payload could not be read), why, and when.
Written inside the move that gives the turn up; read by people investigating."""

from __future__ import annotations

import time
from typing import Any

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.turn.model import Entry, QueuedTurn

MAX_LETTERS = 10_000  # per shard, approximately


class DeadLetters:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self.shards = keys.shards

    def add_to(self, commands: Any, entry: Entry, reason: str) -> None:
        """Queue the letter on a step (a fenced move's commands, or a transaction)."""
        commands.xadd(
            self.keys.dead_turns(self.shards.of_id(entry.entry_id)),
            {
                "entry_id": entry.entry_id,
                "turn": entry.turn.to_json() if isinstance(entry, QueuedTurn) else "",
                "reason": reason,
                "at": str(time.time()),
            },
            maxlen=MAX_LETTERS,
            approximate=True,
        )

    async def latest(self, count: int = 100) -> list[dict[str, Any]]:
        """The latest ``count`` dead letters of every shard, newest first."""
        async with self.client.pipeline(transaction=False) as pipe:
            for shard in self.shards.all():
                pipe.xrevrange(self.keys.dead_turns(shard), count=count)
            replies = await pipe.execute()
        letters = [dict(fields) for items in replies for _, fields in items]
        letters.sort(key=lambda letter: float(letter.get("at") or 0), reverse=True)
        return letters[:count]
