"""Putting a worker together from the process's Redis state: the one place that knows which
stores each part gets."""

from __future__ import annotations

from bot.config.schema import QueueConfig
from bot.process.state import State
from bot.turn.agent import Agent
from bot.turn.effects import TurnStores
from bot.turn.owner import Timing
from bot.turn.responder import Responder
from bot.turn.worker.consumer import Worker, consumer_name
from bot.turn.worker.processor import FAILURE_BACKOFF_S, ThreadProcessor
from bot.turn.worker.stops import POLL_S, StopWatcher


def turn_stores(state: State) -> TurnStores:
    return TurnStores(
        records=state.records,
        queue=state.queue,
        history=state.history,
        audit=state.audit,
        usage=state.usage,
        notices=state.notices,
    )


def build_worker(
    state: State,
    agent: Agent,
    responder: Responder,
    queue: QueueConfig,
    *,
    name: str | None = None,
    timing: Timing | None = None,
    stop_poll_s: float = POLL_S,
    failure_backoff_s: float = FAILURE_BACKOFF_S,
    block_ms: int | None = None,
) -> Worker:
    """A worker over ``state`` with the queue settings; ``timing`` overrides the delivery
    retry pace (tests make it quick)."""
    consumer = name or consumer_name()
    processor = ThreadProcessor(
        turn_stores(state),
        state.locks,
        agent,
        responder,
        StopWatcher(state.stops, poll_s=stop_poll_s),
        timing
        or Timing(max_attempts=queue.max_attempts, deliver_timeout_s=queue.deliver_timeout_s),
        consumer=consumer,
        failure_backoff_s=failure_backoff_s,
    )
    return Worker(
        state.queue,
        processor,
        state.notices,
        responder,
        concurrency=queue.concurrency,
        claim_idle_s=queue.claim_idle_s,
        shutdown_grace_s=queue.shutdown_grace_s,
        embedded=state.handle.embedded,
        name=consumer,
        **({"block_ms": block_ms} if block_ms is not None else {}),
    )
