"""What a turn pays to read its channel (bot/channels/reader.py) on a real Redis (REDIS_URL,
default 127.0.0.1:6379): Redis round trips and the process's CPU per read, and the CPU of the
prompt text made of it (bot/channels/prompt.py), for a channel with nothing (no
``channels:`` section, nothing set in Slack: what every turn reads) and for a full one (a
file entry, values set in Slack, 50 notes of 400 characters). A lone ``GET`` is the yardstick
for one round trip's client CPU.

Run: uv run python -m benchmarks.channel_read [--reads N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable

from benchmarks.redis_prefix import delete_prefix
from bot.channels.config import ChannelEntry
from bot.channels.prompt import channel_context
from bot.channels.reader import ChannelReader, ChannelView
from bot.config.schema import AppConfig
from bot.llm.tokens import TokenEstimator
from bot.process.state import State, open_state
from bot.state.channel_memory import MAX_NOTES
from tests.fakes.round_trips import counting_round_trips

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


async def per_call(reads: int, call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Round trips and CPU microseconds per call of ``call``."""
    for _ in range(50):  # warm up: scripts, connections
        await call()
    with counting_round_trips() as trips:
        started = time.process_time()
        for _ in range(reads):
            await call()
        cpu = time.process_time() - started
    return trips.sent / reads, cpu / reads * 1e6


async def fill(state: State) -> None:
    channels, memory = state.shared.channels, state.shared.memory
    await channels.set("T1", "C0FULL", "tools", ["get_time", "search_*"], "U0ADMIN")
    await channels.set("T1", "C0FULL", "instructions", "Answer briefly. " * 20, "U0ADMIN")
    for n in range(MAX_NOTES):
        await memory.add("T1", "C0FULL", f"Note {n}: " + "x" * 390, "U0BEA", "C0FULL", f"k{n}")


async def main(reads: int) -> None:
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    state = open_state(REDIS_URL, AppConfig.model_validate({"redis": {"key_prefix": prefix}}))
    estimator = TokenEstimator()
    try:
        await fill(state)
        shared = state.shared
        empty = ChannelReader({}, shared.channels, shared.memory)
        entry = ChannelEntry.model_validate({"instructions": "Support. " * 50, "memory": True})
        full = ChannelReader({"C0FULL": entry}, shared.channels, shared.memory)
        view: ChannelView = await full.read("C0FULL", "U0ANA", False)
        assert len(view.notes) == MAX_NOTES

        async def prompt() -> str:
            return channel_context(view, estimator, dm=False)

        print(f"Reading a turn's channel ({reads} reads each, {REDIS_URL.split('@')[-1]})")
        print(f"{'what':<44} {'round trips':>12} {'CPU µs':>8}")
        for label, call in (
            ("a lone GET (one round trip)", lambda: state.client.get(f"{prefix}none")),
            ("read: nothing set (no channels: section)", lambda: empty.read("C0X", "U0ANA", False)),
            (
                "read: file entry, Slack values, 50 notes",
                lambda: full.read("C0FULL", "U0ANA", False),
            ),
            ("prompt text of the full one", prompt),
        ):
            trips, cpu = await per_call(reads, call)
            print(f"{label:<44} {trips:>12.1f} {cpu:>8.1f}")
    finally:
        await state.aclose()
        await delete_prefix(REDIS_URL, prefix)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reads", type=int, default=2000)
    asyncio.run(main(parser.parse_args().reads))
