"""Stop requests (the Stop button) for the turns this process runs, from any replica.

One poller per process asks Redis, in one round trip every ``poll_s``, whether any running
turn was asked to stop, and sets that turn's cancel event. A request made before a turn
started is for an earlier turn and never stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator

from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.stops import StopRequests

log = logging.getLogger(__name__)

POLL_S = 0.5


class StopWatcher:
    def __init__(self, requests: StopRequests, poll_s: float = POLL_S) -> None:
        self.requests = requests
        self.poll_s = poll_s
        self._running: dict[ThreadKey, tuple[asyncio.Event, float]] = {}
        self._poller: asyncio.Task[None] | None = None

    @contextlib.contextmanager
    def watching(self, thread: ThreadKey) -> Iterator[asyncio.Event]:
        """An event set when someone asks to stop the turn running in ``thread``."""
        cancel = asyncio.Event()
        self._running[thread] = (cancel, time.time())
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        try:
            yield cancel
        finally:
            self._running.pop(thread, None)

    def stop(self, thread: ThreadKey) -> bool:
        """Stop the turn running in ``thread`` in this process."""
        running = self._running.get(thread)
        if running is None:
            return False
        running[0].set()
        return True

    async def _poll(self) -> None:
        while self._running:
            await asyncio.sleep(self.poll_s)
            running = dict(self._running)
            try:
                requested = await self.requests.requested_since(
                    {thread: at for thread, (_, at) in running.items()}
                )
            except Exception:
                log.debug("could not check for stop requests", exc_info=True)
                continue
            for thread in requested:
                if thread in running:
                    log.info("stop requested in %s", thread)
                    running[thread][0].set()
