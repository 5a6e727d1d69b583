"""The agent loop's own overhead per round, for 1, 4 and 16 parallel tool calls.

Two set-ups:
- "in-process": a zero-latency model object and no-op tools, so the figure is the loop alone
  (building messages, repairing them, listing tools, running calls, events, results);
- "HTTP": the real openai client streaming from the fake server on loopback, which adds
  the SDK, JSON and the socket.

Run: uv run python -m benchmarks.loop_overhead [--turns N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

from bot.agent import AgentEvent, LoopSettings, run_turn
from bot.config.schema import LLMConfig
from bot.llm import ModelResponse, OpenAIChatModel, ToolCall, Usage
from tests.fakes.function_model import FunctionModel
from tests.fakes.llm_server import FakeLLM, calls, text
from tools import StaticToolset, tool

ROUNDS = 4  # tool rounds per turn, then one answer


@tool
async def noop(n: int) -> str:
    """Return at once."""
    return f"ok {n}"


TOOLSET = StaticToolset([noop])
SETTINGS = LoopSettings(system_prompt="bench", max_rounds=ROUNDS + 1)


def instant_model(width: int) -> FunctionModel:
    """Answers at once: ``ROUNDS`` rounds of ``width`` calls, then a short answer."""

    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        done = sum(1 for m in messages if m.get("role") == "assistant")
        usage = Usage(10, 5, requests=1)
        if done >= ROUNDS:
            return ModelResponse(text="done", usage=usage)
        batch = [ToolCall(f"c{done}_{i}", "noop", json.dumps({"n": i})) for i in range(width)]
        return ModelResponse(text="", tool_calls=batch, usage=usage)

    return FunctionModel(respond)


async def _observer(event: AgentEvent) -> None:
    return None


async def per_round_ms(model: Any, turns: int) -> list[float]:
    samples = []
    for _ in range(turns):
        started = time.perf_counter()
        result = await run_turn(model, SETTINGS, [], "go", TOOLSET, observer=_observer)
        elapsed = time.perf_counter() - started
        assert result.rounds == ROUNDS + 1, result
        samples.append(elapsed * 1000 / result.rounds)
    return samples


async def http_samples(width: int, turns: int) -> list[float]:
    server = FakeLLM()
    await server.start()
    model = OpenAIChatModel(
        LLMConfig(model="fake-model", max_retries=0), api_key="k", base_url=server.base_url
    )
    try:
        for _ in range(turns):
            for r in range(ROUNDS):
                server.add(calls(*[("noop", {"n": i}, f"c{r}_{i}") for i in range(width)]))
            server.add(text("done"))
        return await per_round_ms(model, turns)
    finally:
        await model.aclose()
        await server.stop()


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def main(turns: int) -> None:
    print(f"agent loop overhead per round ({turns} turns x {ROUNDS + 1} rounds each)")
    print(f"{'set-up':<12} {'tools/round':>11} {'median ms':>10} {'p99 ms':>8}")
    for label, sampler in (("in-process", "instant"), ("HTTP", "http")):
        for width in (1, 4, 16):
            if sampler == "instant":
                await per_round_ms(instant_model(width), 5)  # warm up
                samples = await per_round_ms(instant_model(width), turns)
            else:
                samples = await http_samples(width, max(turns // 5, 20))
            median = statistics.median(samples)
            print(f"{label:<12} {width:>11} {median:>10.3f} {p99(samples):>8.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=300)
    asyncio.run(main(parser.parse_args().turns))
