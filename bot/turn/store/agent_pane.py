"""What the bot keeps about agent-pane threads: whether it greeted the thread (once,
however often Slack delivers the event again) and which channel the person is looking at
(Slack's thread context), for the model."""

from __future__ import annotations

import json
from typing import Any

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.thread_key import ThreadKey


class AgentPaneThreads:
    def __init__(self, client: Redis, keys: Keys, ttl_s: int) -> None:
        self.client = client
        self.keys = keys
        self.ttl_s = ttl_s

    async def first_start(self, thread: ThreadKey) -> bool:
        """True the first time a thread's start is seen (greet it, set its prompts)."""
        return bool(await self.client.set(self.keys.greeted(thread), "1", nx=True, ex=self.ttl_s))

    async def forget_start(self, thread: ThreadKey) -> None:
        """The greeting could not be posted: let a redelivered start try again."""
        await self.client.delete(self.keys.greeted(thread))

    async def set_context(self, thread: ThreadKey, context: dict[str, Any]) -> None:
        """Slack's thread context: the channel the person is looking at, and its team."""
        value = json.dumps(context, separators=(",", ":"))
        await self.client.set(self.keys.pane_context(thread), value, ex=self.ttl_s)

    async def context(self, thread: ThreadKey) -> dict[str, Any]:
        raw = await self.client.get(self.keys.pane_context(thread))
        try:
            value = json.loads(raw) if raw else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
