"""``slack-agent run`` and ``slack-agent worker`` as real processes, the way they are deployed."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.process.state import State
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM, text
from tests.fakes.redis_server import free_port
from tests.fakes.slack_harness import (
    SECRET,
    app_environment,
    event_envelope,
    mention,
    signed_headers,
)
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until, until_true


@pytest.fixture
async def processes() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    started: list[asyncio.subprocess.Process] = []
    yield started
    for process in started:
        if process.returncode is None:
            process.kill()
            await process.wait()


def environment(fake_slack: FakeSlack, fake_llm: FakeLLM, config: Path) -> dict[str, str]:
    return app_environment(fake_slack.api_url, fake_llm.base_url, REDIS_URL, config)


def http_config(tmp_path: Path, key_prefix: str) -> Path:
    config = tmp_path / "agent.yaml"
    config.write_text(f"redis: {{key_prefix: '{key_prefix}'}}\nslack: {{streaming: false}}\n")
    return config


async def spawn(
    processes: list[asyncio.subprocess.Process], env: dict[str, str], *args: str
) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    processes.append(process)
    return process


async def healthy(port: int) -> None:
    async def ok() -> bool:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{port}/healthz") as response,
            ):
                return response.status == 200 and (await response.json())["redis"] == "ok"
        except aiohttp.ClientError:
            return False

    deadline = time.monotonic() + 30
    while not await ok():
        assert time.monotonic() < deadline, "the app did not come up"
        await asyncio.sleep(0.1)


async def send_mention(port: int, message: str, ts: str) -> int:
    body = json.dumps(event_envelope(mention(message, ts), f"Ev{ts}"))
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{port}/slack/events", data=body, headers=signed_headers(body)
        ) as response,
    ):
        return response.status


async def readiness_checks(port: int) -> dict[str, str]:
    """The checks the process reports on /readyz, by name (a process with a worker loop
    lists "worker")."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/readyz") as response,
    ):
        checks: dict[str, str] = (await response.json())["checks"]
        return checks


def answers(fake_slack: FakeSlack, ts: str) -> list[str]:
    return [
        m.shown
        for m in fake_slack.thread("C0CHAN", ts)
        if not m.streaming and m.blocks and m.blocks[0].get("type") == "markdown"
    ]


async def queued(state: State) -> bool:
    """One turn accepted and not finished: waiting in the queue's stream."""
    return int(await state.client.xlen(state.keys.turns(0))) == 1


async def test_run_serves_http_answers_and_stops_cleanly(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    processes: list[asyncio.subprocess.Process],
    state: State,
) -> None:
    config = http_config(tmp_path, key_prefix)
    port = free_port()
    fake_llm.add(text("Served over HTTP."))
    process = await spawn(
        processes, environment(fake_slack, fake_llm, config), "run", "--port", str(port)
    )
    await healthy(port)
    assert await send_mention(port, "hello", "300.000001") == 200
    await until(lambda: answers(fake_slack, "300.000001") == ["Served over HTTP."], 20)
    process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(process.wait(), 30) == 0
    err = (await process.stderr.read()).decode()  # type: ignore[union-attr]
    assert "listening on http://0.0.0.0:" in err
    assert "Redis keeps nothing on disk" in err  # the shared test Redis has no AOF, no RDB
    assert "xoxb-test" not in err and "sk-test" not in err and SECRET not in err


async def get(port: int, path: str) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status


async def test_http_mode_keeps_metrics_off_slacks_public_port(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    processes: list[asyncio.subprocess.Process],
) -> None:
    config = http_config(tmp_path, key_prefix)
    port = free_port()
    process = await spawn(
        processes, environment(fake_slack, fake_llm, config), "run", "--port", str(port)
    )
    await healthy(port)
    await until_true(lambda: readiness_ok(port), 20)
    assert await get(port, "/healthz") == 200
    assert await get(port, "/metrics") == 404  # nothing but Slack's events and the probes
    process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(process.wait(), 30) == 0
    err = (await process.stderr.read()).decode()  # type: ignore[union-attr]
    assert "health and metrics on" not in err  # no other listener was opened


async def readiness_ok(port: int) -> bool:
    return await get(port, "/readyz") == 200


async def test_ingress_and_workers_scale_apart(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    processes: list[asyncio.subprocess.Process],
    state: State,
) -> None:
    config = http_config(tmp_path, key_prefix)
    env = environment(fake_slack, fake_llm, config)
    port = free_port()
    fake_llm.add(text("Answered by a worker process."))
    await spawn(processes, env, "run", "--port", str(port), "--no-worker")
    await healthy(port)
    assert await send_mention(port, "who answers?", "301.000001") == 200
    # The turn is in the queue, and the ingress process says it runs no worker loop.
    await until_true(lambda: queued(state), 10)
    assert await readiness_checks(port) == {"redis": "ok"}
    assert fake_llm.requests == []  # the ingress process only queued it
    worker = await spawn(processes, env, "worker", "--processes", "0")
    await until(lambda: answers(fake_slack, "301.000001") == ["Answered by a worker process."], 30)
    # Only the worker process ever read the queue (a consumer stays in the group once it has
    # read): the ingress process never took the turn.
    consumers = await state.client.xinfo_consumers(state.keys.turns(0), state.keys.workers)
    assert [c["name"].split("-")[-2] for c in consumers] == [str(worker.pid)]
    worker.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(worker.wait(), 30) == 0


async def test_run_without_slack_credentials_names_what_is_missing(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    processes: list[asyncio.subprocess.Process],
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("{}\n")
    env = environment(fake_slack, fake_llm, config)
    del env["SLACK_BOT_TOKEN"]
    process = await spawn(processes, env, "run")
    assert await asyncio.wait_for(process.wait(), 30) == 2
    assert "SLACK_BOT_TOKEN is not set" in (await process.stderr.read()).decode()  # type: ignore[union-attr]
    env = environment(fake_slack, fake_llm, config)
    del env["SLACK_SIGNING_SECRET"]
    process = await spawn(processes, env, "run")
    assert await asyncio.wait_for(process.wait(), 30) == 2
    assert "SLACK_SIGNING_SECRET is not set" in (await process.stderr.read()).decode()  # type: ignore[union-attr]


async def test_run_and_worker_refuse_a_redis_without_persistence_when_it_is_required(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    processes: list[asyncio.subprocess.Process],
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(f"redis: {{key_prefix: '{key_prefix}', require_persistence: true}}\n")
    env = environment(fake_slack, fake_llm, config)  # the shared test Redis: no AOF, no RDB
    for command in (["run", "--port", str(free_port())], ["worker"]):
        process = await spawn(processes, env, *command)
        assert await asyncio.wait_for(process.wait(), 30) == 2
        err = (await process.stderr.read()).decode()  # type: ignore[union-attr]
        assert "slack-agent: configuration error" in err
        assert "redis.require_persistence is true" in err
        assert "keeps nothing on disk" in err and "appendonly yes" in err
        assert "Traceback" not in err
