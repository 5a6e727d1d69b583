"""Redis cost and queue latency of turns on a real Redis (REDIS_URL, default 127.0.0.1:6379).

Prints:
- Redis round trips and bytes (both directions, as the server counts them) per turn, for a
  turn with one tool round and for a plain question-and-answer turn, and that turn again
  reading its channel's settings and notes (bot/channels/reader.py, no ``channels:``
  section: what every Slack turn reads);
- enqueue-to-start latency (a turn enqueued until its worker calls the model), p50 and p99,
  with 1, 8 and 64 turns enqueued at once.

Run: uv run python -m benchmarks.redis_turns [--turns N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from bot.agent.events import AgentEvent
from bot.channels.reader import ChannelReader, ChannelView
from bot.config.schema import AppConfig
from bot.llm.response import ModelResponse, ToolCall
from bot.llm.usage import Usage
from bot.process.state import State, open_state
from bot.turn.model import QueuedTurn, Turn
from bot.turn.ports import ChannelFor, Deadline, DeliveryRecord, Fence, Settled, no_channel
from bot.turn.store.notices import Notice
from bot.turn.worker.consumer import Worker
from tests.fakes.function_model import FunctionModel
from tests.fakes.round_trips import RoundTrips, counting_round_trips
from tests.fakes.worker_kit import make_worker as kit_worker
from tools import tool

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


@tool
def noop(n: int) -> str:
    """Return at once."""
    return f"ok {n}"


class Responder:
    """Counts deliveries; the view does nothing else."""

    def __init__(self) -> None:
        self.done = 0
        self.finished = asyncio.Event()
        self.expected = 0

    @contextlib.asynccontextmanager
    async def view(
        self, queued: QueuedTurn, delivery: DeliveryRecord, fence: Fence
    ) -> AsyncIterator[Responder]:
        yield self

    async def observe(self, event: AgentEvent) -> None:
        return None

    async def deliver(self, settled: Settled) -> None:
        self.done += 1
        if self.done >= self.expected:
            self.finished.set()

    def delivery(self) -> DeliveryRecord:
        return {}

    async def post_notice(self, notice: Notice, deadline: Deadline) -> None:
        raise AssertionError("a benchmark turn failed")


def model(with_tool: bool, starts: dict[str, float]) -> FunctionModel:
    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        starts.setdefault(str(question), time.perf_counter())
        if with_tool and messages[-1]["role"] == "user":
            return ModelResponse("", [ToolCall("c1", "noop", '{"n": 1}')], Usage(50, 5, requests=1))
        return ModelResponse("answer " * 20, usage=Usage(60, 40, requests=1))

    return FunctionModel(respond)


async def run_batch(
    state: State,
    responder: Responder,
    turns: list[Turn],
    enqueued: dict[str, float],
) -> None:
    responder.done, responder.expected = 0, len(turns)
    responder.finished.clear()
    for turn in turns:
        enqueued[turn.text] = time.perf_counter()
    await asyncio.gather(*(state.threads.queue.enqueue(turn) for turn in turns))
    await asyncio.wait_for(responder.finished.wait(), 60)


async def net_bytes(state: State) -> int:
    stats = await state.client.info("stats")
    return int(stats["total_net_input_bytes"]) + int(stats["total_net_output_bytes"])


async def main(turns: int) -> None:
    with counting_round_trips() as trips:
        await measure(turns, trips)


async def measure(turns: int, trips: RoundTrips) -> None:
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    config = AppConfig.model_validate({"redis": {"key_prefix": prefix}})
    state = open_state(REDIS_URL, config)
    responder = Responder()
    try:
        print(f"Redis per turn ({turns} turns each, {REDIS_URL.split('@')[-1]})")
        print(f"{'turn':<26} {'round trips':>12} {'bytes':>10}")
        shared = state.shared
        reader = ChannelReader({}, shared.channels, shared.memory)

        async def channel_for(turn: Turn) -> ChannelView:
            return await reader.read(turn.channel, turn.user, False)

        for row, (label, with_tool, channel) in enumerate(
            (
                ("one tool round + answer", True, no_channel),
                ("answer only", False, no_channel),
                ("answer only, channel read", False, channel_for),
            )
        ):
            starts: dict[str, float] = {}
            worker = make_worker(
                state, model(with_tool, starts), responder, concurrency=1, channel_for=channel
            )
            stop = asyncio.Event()
            task = asyncio.create_task(worker.run(stop))
            await asyncio.sleep(0.3)  # let the worker settle into its blocking read
            trips_before, bytes_before = trips.sent, await net_bytes(state)
            for n in range(turns):
                thread = f"{label}-{n % 10}"  # ten threads, so histories grow like real ones
                ts = f"{row + 1}{n}.1"
                turn = Turn("T1", "C1", thread, "U1", f"q{label}{n}", ts, f"Ev{label}{n}")
                await run_batch(state, responder, [turn], {})
            per_turn = (trips.sent - trips_before) / turns
            size = (await net_bytes(state) - bytes_before) / turns
            stop.set()
            await task
            print(f"{label:<26} {per_turn:>12.1f} {size:>10.0f}")

        print()
        print("enqueue-to-start latency (ms)")
        print(f"{'concurrent turns':>16} {'p50':>8} {'p99':>8}")
        for width in (1, 8, 64):
            starts = {}
            worker = make_worker(state, model(False, starts), responder, concurrency=64)
            stop = asyncio.Event()
            task = asyncio.create_task(worker.run(stop))
            await asyncio.sleep(0.3)
            enqueued: dict[str, float] = {}
            for batch in range(max(turns // width, 3)):
                batch_turns = [
                    Turn(
                        "T1",
                        f"L{width}",
                        f"lat-{width}-{batch}-{i}",
                        "U1",
                        f"l{width}-{batch}-{i}",
                        f"{batch}.{i}",
                        f"EvL{width}-{batch}-{i}",
                    )
                    for i in range(width)
                ]
                await run_batch(state, responder, batch_turns, enqueued)
            stop.set()
            await task
            samples = sorted((starts[k] - enqueued[k]) * 1000 for k in enqueued)
            p99 = samples[min(len(samples) - 1, round(0.99 * (len(samples) - 1)))]
            print(f"{width:>16} {statistics.median(samples):>8.2f} {p99:>8.2f}")
    finally:
        keys = [key async for key in state.client.scan_iter(match=f"{prefix}*")]
        if keys:
            await state.client.delete(*keys)
        await state.aclose()


def make_worker(
    state: State,
    fn_model: FunctionModel,
    responder: Responder,
    concurrency: int,
    channel_for: ChannelFor = no_channel,
) -> Worker:
    return kit_worker(
        state,
        fn_model,
        responder,
        tools=[noop],
        concurrency=concurrency,
        claim_idle_s=60,
        channel_for=channel_for,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=200)
    asyncio.run(main(parser.parse_args().turns))
