"""Building workers for tests: an agent on the fake LLM with the step tool, and responders
that stand in for Slack (in memory, or in Redis across processes)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from bot.agent.events import AgentEvent
from bot.agent.loop import LoopSettings
from bot.channels.reader import ChannelView
from bot.config.schema import AppConfig, LLMConfig, QueueConfig
from bot.llm.client import OpenAIChatModel
from bot.llm.model import ChatModel
from bot.llm.tokens import TokenEstimator
from bot.process.state import State, open_state
from bot.process.worker import build_worker as assemble
from bot.turn.model import QueuedTurn, Turn
from bot.turn.owner import Timing
from bot.turn.ports import (
    Agent,
    ChannelFor,
    Deadline,
    DeliveryFailed,
    DeliveryRecord,
    Fence,
    Settled,
    no_channel,
)
from bot.turn.store.notices import Notice
from bot.turn.worker.consumer import Worker
from tools import StaticToolset, Tool, Toolset


class MemoryView:
    def __init__(self, responder: MemoryResponder, turn: Turn, delivery: DeliveryRecord) -> None:
        self.responder = responder
        self.turn = turn
        self.record = dict(delivery)

    async def observe(self, event: AgentEvent) -> None:
        self.responder.events.append(event)

    async def deliver(self, settled: Settled) -> None:
        if self.responder.fail_next:
            self.responder.fail_next -= 1
            raise self.responder.failure
        self.responder.delivered.append((self.turn, settled.text, settled.reason))

    def delivery(self) -> DeliveryRecord:
        return self.record


class MemoryResponder:
    """Records deliveries in memory; can be told to fail the next N deliveries."""

    def __init__(self) -> None:
        self.delivered: list[tuple[Turn, str, str]] = []
        self.gave_up: list[Notice] = []
        self.events: list[AgentEvent] = []
        self.fail_next = 0
        self.failure: Exception = DeliveryFailed("service_unavailable")

    @contextlib.asynccontextmanager
    async def view(
        self, queued: QueuedTurn, delivery: DeliveryRecord, fence: Fence
    ) -> AsyncIterator[MemoryView]:
        yield MemoryView(self, queued.turn, delivery)

    async def post_notice(self, notice: Notice, deadline: Deadline) -> None:
        self.gave_up.append(notice)

    def texts(self) -> list[str]:
        return [text for _, text, _ in self.delivered]


class ListView:
    """Delivers by pushing onto a Redis list, recorded like a Slack post: "posting" before,
    "posted" after, and a resumed attempt looks for its entry before pushing again."""

    def __init__(
        self, state: State, key: str, entry_id: str, delivery: DeliveryRecord, fence: Fence
    ) -> None:
        self.state = state
        self.key = key
        self.entry_id = entry_id
        self.record = dict(delivery)
        self.fence = fence

    async def observe(self, event: AgentEvent) -> None:
        return None

    async def deliver(self, settled: Settled) -> None:
        if self.record.get("posted"):
            return
        item = json.dumps({"turn": self.entry_id, "text": settled.text})
        if self.record.get("posting") and item in await self.state.client.lrange(self.key, 0, -1):
            return
        self.record["posting"] = True
        await self.fence.save_delivery(self.record)
        async with self.fence.bounded("pushing the answer"):  # as Slack calls are
            await self.state.client.rpush(self.key, item)
        self.record["posted"] = True
        await self.fence.save_delivery(self.record)

    def delivery(self) -> DeliveryRecord:
        return self.record


class ListResponder:
    """Pushes each delivered answer onto a Redis list (works across processes)."""

    def __init__(self, state: State, key: str) -> None:
        self.state = state
        self.key = key

    @contextlib.asynccontextmanager
    async def view(
        self, queued: QueuedTurn, delivery: DeliveryRecord, fence: Fence
    ) -> AsyncIterator[ListView]:
        yield ListView(self.state, self.key, queued.entry_id, delivery, fence)

    async def post_notice(self, notice: Notice, deadline: Deadline) -> None:
        item = json.dumps({"turn": notice.id, "text": "GAVE UP"})
        async with deadline.bounded("pushing the notice"):  # as Slack calls are
            await self.state.client.rpush(self.key, item)


async def delivered_texts(state: State, key: str) -> list[str]:
    return [json.loads(item)["text"] for item in await state.client.lrange(key, 0, -1)]


def worker_config(prefix: str, **queue: Any) -> AppConfig:
    settings = {"lock_ttl_s": 2.0, "claim_idle_s": 1.0, **queue}
    return AppConfig.model_validate({"redis": {"key_prefix": prefix}, "queue": settings})


def make_worker(
    state: State,
    model: ChatModel,
    responder: Any,
    *,
    tools: Sequence[Tool] = (),
    name: str | None = None,
    concurrency: int = 4,
    claim_idle_s: float = 1.0,
    max_attempts: int = 3,
    deliver_timeout_s: float = 600.0,
    shutdown_grace_s: float = 25.0,
    toolset: Toolset | None = None,
    channel_for: ChannelFor = no_channel,
) -> Worker:
    """``channel_for``: what a turn's channel sets (none: no channel settings)."""
    chosen = toolset or StaticToolset(tools)

    async def toolset_for(
        queued: QueuedTurn, deadline: Deadline, channel: ChannelView | None
    ) -> Toolset:
        return chosen

    agent = Agent(
        model,
        LoopSettings(system_prompt="test"),
        toolset_for,
        16000,
        TokenEstimator(),
        channel_for=channel_for,
    )
    queue = QueueConfig.model_construct(  # tests may go past the config's limits
        concurrency=concurrency,
        claim_idle_s=claim_idle_s,
        max_attempts=max_attempts,
        deliver_timeout_s=deliver_timeout_s,
        shutdown_grace_s=shutdown_grace_s,
    )
    timing = Timing(
        max_attempts=max_attempts,
        deliver_timeout_s=deliver_timeout_s,
        retry_start_s=0.05,
        retry_max_s=0.2,
    )
    return assemble(
        state,
        agent,
        responder,
        queue,
        name=name or "worker",
        timing=timing,
        stop_poll_s=0.1,
        failure_backoff_s=0.01,
        block_ms=200,
    )


def build_worker(
    redis_url: str, prefix: str, llm_base_url: str, responder: Any = None, *, name: str
) -> tuple[Worker, State]:
    """A worker on the fake LLM with the step tool, as the kill tests need in both processes."""
    from tests.fakes.step_tools import step

    os.environ.setdefault("STEP_REDIS_URL", redis_url)
    os.environ.setdefault("STEP_RUNS_KEY", prefix + "runs")
    state = open_state(redis_url, worker_config(prefix))
    model = OpenAIChatModel(
        LLMConfig(model="fake-model", max_retries=0), api_key="k", base_url=llm_base_url
    )
    chosen = responder or ListResponder(state, prefix + "delivered")
    return make_worker(state, model, chosen, tools=[step], name=name), state


@contextlib.asynccontextmanager
async def running(*workers: Worker) -> AsyncIterator[None]:
    """The workers run for the block, then stop (each within 40 s)."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 40)
