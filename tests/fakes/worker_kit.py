"""Building workers for tests: an agent on the fake LLM with the step tool, and responders."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from bot.agent.events import Observer
from bot.agent.loop import LoopSettings
from bot.agent.result import TurnResult
from bot.config.schema import AppConfig, LLMConfig
from bot.llm.client import ChatModel, OpenAIChatModel
from bot.llm.tokens import TokenEstimator
from bot.state.store import State, open_state
from bot.turn import Turn
from bot.worker.consumer import Worker
from bot.worker.processor import Agent, TurnProcessor
from tools import StaticToolset, Tool, Toolset


class ListResponder:
    """Pushes each delivered answer onto a Redis list (works across processes)."""

    def __init__(self, state: State, key: str) -> None:
        self.state = state
        self.key = key

    def observer(self, turn: Turn) -> Observer | None:
        return None

    async def deliver(self, turn: Turn, text: str, result: TurnResult | None) -> None:
        await self.state.client.rpush(self.key, text)

    async def give_up(self, turn: Turn, text: str) -> None:
        await self.state.client.rpush(self.key, "GAVE UP: " + text)


class MemoryResponder:
    """Records deliveries in memory; can be told to fail the next N deliveries."""

    def __init__(self) -> None:
        self.delivered: list[tuple[Turn, str, TurnResult | None]] = []
        self.gave_up: list[Turn] = []
        self.fail_next = 0

    def observer(self, turn: Turn) -> Observer | None:
        return None

    async def deliver(self, turn: Turn, text: str, result: TurnResult | None) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("Slack is having a bad day")
        self.delivered.append((turn, text, result))

    async def give_up(self, turn: Turn, text: str) -> None:
        self.gave_up.append(turn)

    def texts(self) -> list[str]:
        return [text for _, text, _ in self.delivered]


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
    toolset: Toolset | None = None,
) -> Worker:
    chosen = toolset or StaticToolset(tools)

    async def toolset_for(turn: Turn) -> Toolset:
        return chosen

    agent = Agent(model, LoopSettings(system_prompt="test"), toolset_for, 16000, TokenEstimator())
    processor = TurnProcessor(
        state, agent, responder, max_attempts=max_attempts, retry_delay_s=0.01
    )
    return Worker(
        state,
        processor,
        concurrency=concurrency,
        claim_idle_s=claim_idle_s,
        name=name,
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
