"""The queue gauges, read from Redis by every worker process every few seconds.

The queue is shared, so every replica reports the same depth and age: dashboards and alerts
take ``max`` across replicas, never ``sum``. A reading that fails leaves the last values.
"""

from __future__ import annotations

import asyncio
import logging

from bot.agent.cancellation import sleep_unless
from bot.observability import metrics
from bot.turn.store.queue import TurnQueue

log = logging.getLogger(__name__)

SAMPLE_EVERY_S = 5.0


async def sample_once(queue: TurnQueue) -> None:
    try:
        depth, oldest_s = await queue.depth()
    except Exception as exc:  # Redis away: the worker loop says so; keep the last values
        log.debug("could not read the queue's depth: %s", exc)
        return
    metrics.safely(lambda: metrics.QUEUE_DEPTH.set(depth))
    metrics.safely(lambda: metrics.QUEUE_OLDEST_SECONDS.set(oldest_s))


async def sample_queue(
    queue: TurnQueue, stop: asyncio.Event, every_s: float = SAMPLE_EVERY_S
) -> None:
    """Keep the queue gauges current until ``stop`` is set."""
    while not stop.is_set():
        await sample_once(queue)
        await sleep_unless(every_s, stop)
