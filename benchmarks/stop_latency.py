"""How long Slack's own stop button takes to stop a turn, with two replicas.

Two `slack-agent run` processes share one Redis (REDIS_URL, default 127.0.0.1:6379), the
fake Slack and the fake LLM. Each trial @mentions the bot through one replica; the model
asks for a tool that would run for a minute; once the answer's stream has started, the
`agent_session_stopped` event goes to a replica (alternately the other one and the same
one, since Slack may deliver it to any). The turn is stopped when the agent session goes
back to active. Prints the time from the stop event being sent until then, p50, p99 and max,
per replica that received the stop.

Run: uv run python -m benchmarks.stop_latency [--trials 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from benchmarks.redis_prefix import delete_prefix
from benchmarks.slack_turns import REDIS_URL, percentile, wait_healthy
from tests.fakes.llm_server import FakeLLM, Reply, calls, text
from tests.fakes.redis_server import free_port
from tests.fakes.slack_harness import app_environment, event_envelope, mention, signed_headers
from tests.fakes.slack_server import FakeSlack


async def post(session: aiohttp.ClientSession, port: int, envelope: dict[str, Any]) -> None:
    body = json.dumps(envelope)
    async with session.post(
        f"http://127.0.0.1:{port}/slack/events", data=body, headers=signed_headers(body)
    ) as response:
        await response.read()
        assert response.status == 200, response.status


async def until(condition: Any, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        await asyncio.sleep(0.005)


async def main(trials: int) -> None:
    def respond(request: dict[str, Any]) -> Reply:
        if request["messages"][-1]["role"] == "tool":
            return text("never reached")
        return calls(("slow_lookup", {"item": "flour"}))

    slack, llm = FakeSlack(), FakeLLM()
    await slack.start()
    await llm.start()
    llm.otherwise = respond
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    config = Path(tempfile.mkdtemp()) / "agent.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "redis": {"key_prefix": prefix},
                "llm": {"model": "fake-model", "max_retries": 0},
                "tools": {"modules": ["benchmarks.bench_tools"]},
            }
        )
    )
    env = app_environment(
        slack.api_url, llm.base_url, REDIS_URL, config, BENCH_TOOL_MS="60000", LOG_LEVEL="WARNING"
    )
    ports = [free_port(), free_port()]
    apps = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "run", "--port", str(port), env=env
        )
        for port in ports
    ]
    latencies: dict[str, list[float]] = {"other replica": [], "same replica": []}
    try:
        async with aiohttp.ClientSession() as session:
            for port in ports:
                await wait_healthy(session, port)
            for n in range(trials):
                asked, told = ports[n % 2], ports[(n // 2) % 2]
                kind = "same replica" if asked == told else "other replica"
                latencies[kind].append(await trial(slack, session, n, asked, told))
    finally:
        for app in apps:
            app.send_signal(signal.SIGTERM)
        for app in apps:
            await app.wait()
        await delete_prefix(REDIS_URL, prefix)
        await slack.stop()
        await llm.stop()

    print(f"{trials} stops with Slack's stop button, 2 replicas (the turn on either)")
    print(f"{'stop sent to':<16} {'n':>4} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    for kind, samples in latencies.items():
        if samples:
            print(
                f"{kind:<16} {len(samples):>4} {statistics.median(samples):>9.1f} "
                f"{percentile(samples, 0.99):>9.1f} {max(samples):>9.1f}"
            )


async def trial(
    slack: FakeSlack, session: aiohttp.ClientSession, n: int, asked: int, told: int
) -> float:
    """One turn asked through ``asked`` and stopped through ``told``: the ms from the stop
    event being sent until the agent session is back to active."""
    channel, ts = f"C{n:05d}", f"{2000 + n}.000001"
    await post(session, asked, event_envelope(mention("stock?", ts, channel), f"Ev{n}"))
    await until(lambda: streaming(slack, channel) is not None)
    await asyncio.sleep(random.uniform(0.1, 1.0))  # the tool is under way
    stream_ts = str(streaming(slack, channel))
    slack.stop_stream_as_user(channel, stream_ts)
    stop = {
        "type": "agent_session_stopped",
        "channel": channel,
        "thread_ts": ts,
        "user": "U0ALICE",
        "streaming_message_ts": [stream_ts],
        "event_ts": f"{2000 + n}.000009",
    }
    sent = time.monotonic()
    await post(session, told, event_envelope(stop, f"EvStop{n}"))
    await until(lambda: slack.session(channel, ts) == "active")
    return (time.monotonic() - sent) * 1000


def streaming(slack: FakeSlack, channel: str) -> str | None:
    """The ts of the message streaming in ``channel``, if any."""
    found = (m.ts for m in slack.messages.values() if m.channel == channel and m.streaming)
    return next(found, None)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=20)
    asyncio.run(main(parser.parse_args().trials))
