"""Stop requests (the Stop button, Slack's own stop of an agent session, a stream the
person stopped), seen by whichever process runs the thread's turn; and the streams the
person stopped, which are never written to again."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.thread_key import ThreadKey

KEEP_S = 600


class StopRequests:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def request(self, thread: ThreadKey, by: str, streams: Sequence[str] = ()) -> None:
        """Ask the thread's running turn to stop. Stored with the time, so a request made
        before a turn started never stops it. ``streams``: messages Slack stopped."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.stop(thread), f"{time.time()} {by}", ex=KEEP_S)
            for ts in streams:
                pipe.set(self.keys.stopped_stream(thread, ts), by, ex=KEEP_S)
            await pipe.execute()

    async def stream_stopped(self, thread: ThreadKey, ts: str) -> bool:
        """Did the person stop this streamed message of the thread in Slack?"""
        return bool(await self.client.exists(self.keys.stopped_stream(thread, ts)))

    async def requested_since(self, since: dict[ThreadKey, float]) -> list[ThreadKey]:
        """Which threads were asked to stop after the given times (one round trip)."""
        if not since:
            return []
        threads = list(since)
        async with self.client.pipeline(transaction=False) as pipe:  # not MGET: across slots
            for thread in threads:
                pipe.get(self.keys.stop(thread))
            values = await pipe.execute()
        return [
            thread
            for thread, value in zip(threads, values, strict=True)
            if value and float(str(value).split(" ", 1)[0]) >= since[thread]
        ]
