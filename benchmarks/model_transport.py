"""The CPU of one model call, over the transport the bot uses (aiohttp under the openai SDK,
bot/llm/transport.py) and over httpx's own connection pool (the SDK's default).

The bot's OpenAIChatModel, streamed, calls the fake LLM in its own process (benchmarks'
fakes: the tool call, then the answer) in batches of ``--concurrency`` turns of two calls
each, on the event loop of `slack-agent worker` (uvloop). The two transports alternate batch
by batch, so both see the same machine; the figure is this process's CPU per model call.

Run: uv run python -m benchmarks.model_transport [--batches N] [--concurrency N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import openai

from benchmarks.fake_services import FakeServices
from bot.config.schema import LLMConfig
from bot.llm.client import OpenAIChatModel
from bot.process.event_loop import run_service

SYSTEM = {"role": "system", "content": "You answer questions about the warehouse. " * 30}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "slow_lookup",
            "description": "Stock of an item.",
            "parameters": {"type": "object", "properties": {"item": {"type": "string"}}},
        },
    }
]


async def turn(model: OpenAIChatModel) -> None:
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": "How much flour?"}]
    first = await model.complete(messages, TOOLS)
    messages.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [c.to_message() for c in first.tool_calls],
        }
    )
    messages += [
        {"role": "tool", "tool_call_id": c.id, "content": "12 bags"} for c in first.tool_calls
    ]

    async def shown(_: str) -> None:
        return None

    await model.complete(messages, TOOLS, on_text=shown)


async def cpu_per_call_ms(model: OpenAIChatModel, concurrency: int) -> float:
    started = time.process_time()
    await asyncio.gather(*(turn(model) for _ in range(concurrency)))
    return (time.process_time() - started) * 1000 / (2 * concurrency)


async def main(batches: int, concurrency: int, llm_ms: int) -> dict[str, list[float]]:
    fakes = await FakeServices.start(llm_ms)
    config = LLMConfig(model="fake-model", max_retries=0, stream=True)
    models = {
        "aiohttp (the bot's)": OpenAIChatModel(config, api_key="k", base_url=fakes.llm_url),
        "httpx (the SDK's default)": OpenAIChatModel(config, api_key="k", base_url=fakes.llm_url),
    }
    models["httpx (the SDK's default)"].client = openai.AsyncOpenAI(
        api_key="k", base_url=fakes.llm_url, max_retries=0, timeout=60
    )
    figures: dict[str, list[float]] = {name: [] for name in models}
    try:
        for model in models.values():  # warm: connections open, code paths run once
            await cpu_per_call_ms(model, concurrency)
        for _ in range(batches):
            for name, model in models.items():
                figures[name].append(await cpu_per_call_ms(model, concurrency))
    finally:
        for model in models.values():
            await model.aclose()
        await fakes.stop()
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--llm-ms", type=int, default=50)
    args = parser.parse_args()
    results = run_service(main(args.batches, args.concurrency, args.llm_ms))
    print(
        f"{args.batches} alternating batches of {args.concurrency} streamed turns "
        f"(2 model calls each); fake LLM {args.llm_ms} ms a call"
    )
    print(f"{'CPU per model call (ms)':34}{'median':>8}{'min':>8}{'max':>8}")
    for name, values in results.items():
        print(f"{name:34}{statistics.median(values):8.3f}{min(values):8.3f}{max(values):8.3f}")
