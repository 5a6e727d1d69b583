"""The agent loop's own overhead per round, for 1, 4 and 16 parallel tool calls.

Three set-ups:
- "in-process": a zero-latency model object and no-op tools, so the figure is the loop alone
  (building messages, repairing them, listing tools, running calls, events, results);
- "HTTP": the bot's loop (run_turn + OpenAIChatModel) against the fake server on loopback,
  streamed and not, which adds the SDK, JSON and the socket;
- "bare SDK": the loop anyone would write with the openai SDK alone, against the same
  server and the same script (create(), collect the calls, run them at once, append the
  results, again), streamed and not. Each HTTP turn alternates with a bare one, so both
  see the same machine; "ratio" is the bot's median round time over the bare loop's.

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

import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from bot.agent import AgentEvent, LoopSettings, run_turn
from bot.config.schema import LLMConfig
from bot.llm.client import OpenAIChatModel
from bot.llm.response import ModelResponse, ToolCall
from bot.llm.usage import Usage
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
        samples.append(await bot_turn_ms(model))
    return samples


async def bot_turn_ms(model: Any) -> float:
    """One turn of the bot's loop; its time per round."""
    started = time.perf_counter()
    result = await run_turn(model, SETTINGS, [], "go", TOOLSET, observer=_observer)
    elapsed = time.perf_counter() - started
    assert result.rounds == ROUNDS + 1, result
    return elapsed * 1000 / result.rounds


# --- the bare openai-SDK loop ------------------------------------------------------------


async def bare_noop(n: int) -> str:
    return f"ok {n}"


BARE_TOOLS: list[ChatCompletionToolParam] = [noop.spec()]  # type: ignore[list-item]


async def bare_round(
    client: openai.AsyncOpenAI, messages: list[ChatCompletionMessageParam], stream: bool
) -> tuple[str, list[dict[str, str]]]:
    """One model call: its text and its tool calls (id, name, arguments)."""
    if not stream:
        completion = await client.chat.completions.create(
            model="fake-model", messages=messages, tools=BARE_TOOLS
        )
        message = completion.choices[0].message
        found = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls or ()
            if c.type == "function"
        ]
        return message.content or "", found
    pieces: list[str] = []
    by_index: dict[int, dict[str, str]] = {}
    chunks = await client.chat.completions.create(
        model="fake-model", messages=messages, tools=BARE_TOOLS, stream=True
    )
    async with chunks:
        async for chunk in chunks:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                pieces.append(delta.content)
            for piece in delta.tool_calls or ():
                call = by_index.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = piece.id or call["id"]
                if piece.function is not None:
                    call["name"] += piece.function.name or ""
                    call["arguments"] += piece.function.arguments or ""
    return "".join(pieces), list(by_index.values())


async def bare_turn_ms(client: openai.AsyncOpenAI, stream: bool) -> float:
    """One turn of the bare loop; its time per round."""
    started = time.perf_counter()
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "bench"},
        {"role": "user", "content": "go"},
    ]
    rounds = 0
    while True:
        rounds += 1
        content, found = await bare_round(client, messages, stream)
        if not found:
            break
        messages.append(
            {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in found
                ],
            }
        )
        results = await asyncio.gather(*(bare_noop(**json.loads(c["arguments"])) for c in found))
        for call, result in zip(found, results, strict=True):
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    elapsed = time.perf_counter() - started
    assert rounds == ROUNDS + 1, rounds
    return elapsed * 1000 / rounds


async def http_samples(width: int, turns: int, stream: bool) -> tuple[list[float], list[float]]:
    """Round times of the bot's loop and of the bare loop, turn by turn alternately."""
    server = FakeLLM()
    await server.start()
    model = OpenAIChatModel(
        LLMConfig(model="fake-model", max_retries=0, stream=stream),
        api_key="k",
        base_url=server.base_url,
    )
    client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0)

    def script() -> None:
        for r in range(ROUNDS):
            server.add(calls(*[("noop", {"n": i}, f"c{r}_{i}") for i in range(width)]))
        server.add(text("done"))

    ours: list[float] = []
    bare: list[float] = []
    try:
        for turn in range(turns + 3):  # the first three warm both up
            first_ours = turn % 2 == 0
            for mine in (first_ours, not first_ours):
                script()
                sample = await bot_turn_ms(model) if mine else await bare_turn_ms(client, stream)
                if turn >= 3:
                    (ours if mine else bare).append(sample)
        return ours, bare
    finally:
        await model.aclose()
        await client.close()
        await server.stop()


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def main(turns: int) -> None:
    print(f"agent loop overhead per round ({turns} turns x {ROUNDS + 1} rounds each)")
    print(f"{'set-up':<12} {'tools/round':>11} {'median ms':>10} {'p99 ms':>8}")
    for width in (1, 4, 16):
        await per_round_ms(instant_model(width), 5)  # warm up
        samples = await per_round_ms(instant_model(width), turns)
        median = statistics.median(samples)
        print(f"{'in-process':<12} {width:>11} {median:>10.3f} {p99(samples):>8.3f}")
    http_turns = max(turns // 5, 20)
    print()
    print(f"the bot's loop against a bare openai-SDK loop, HTTP ({http_turns} turns each)")
    print(
        f"{'streamed':<9} {'tools/round':>11} {'bot median':>11} {'bare median':>12} "
        f"{'ratio':>6} {'bot p99':>8} {'bare p99':>9}"
    )
    for stream in (True, False):
        for width in (1, 4, 16):
            ours, bare = await http_samples(width, http_turns, stream)
            mine, theirs = statistics.median(ours), statistics.median(bare)
            print(
                f"{'yes' if stream else 'no':<9} {width:>11} {mine:>11.3f} {theirs:>12.3f} "
                f"{mine / theirs:>6.2f} {p99(ours):>8.3f} {p99(bare):>9.3f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=300)
    asyncio.run(main(parser.parse_args().turns))
