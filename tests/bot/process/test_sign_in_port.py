"""Where real ``slack-agent run`` and ``worker`` processes serve the sign-in's pages when an
MCP server signs people in: on --port beside Slack's events in HTTP mode; on --port in
Socket Mode, on its own listener when --metrics-port is given (with /healthz, and /metrics
kept off it); never on a worker's port."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from bot.process.state import State
from tests.bot.oauth.signing_in import KEY_TEXT
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_server import free_port
from tests.fakes.slack_harness import app_environment
from tests.fakes.slack_server import FakeSlack
from tests.fakes.socket_mode import FakeSocketMode
from tests.waiting import until_true

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def processes() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    started: list[asyncio.subprocess.Process] = []
    yield started
    for process in started:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.fixture
async def fake_socket(fake_slack: FakeSlack) -> AsyncIterator[FakeSocketMode]:
    server = FakeSocketMode(fake_slack)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def environment(
    fake_slack: FakeSlack, fake_llm: FakeLLM, tmp_path: Path, key_prefix: str, port: int
) -> dict[str, str]:
    config = tmp_path / "agent.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "redis": {"key_prefix": key_prefix},
                "oauth": {"redirect_base_url": f"http://127.0.0.1:{port}"},
                # Nothing listens there: the pages need no MCP server.
                "mcp": {"servers": {"files": {"url": "http://127.0.0.1:9/mcp", "auth": "oauth"}}},
            }
        )
    )
    return app_environment(
        fake_slack.api_url, fake_llm.base_url, REDIS_URL, config, SLACK_AGENT_SECRET_KEY=KEY_TEXT
    )


async def spawn(
    processes: list[asyncio.subprocess.Process], env: dict[str, str], *args: str
) -> None:
    processes.append(
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            *args,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
    )


async def status(port: int, path: str) -> int:
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}{path}", allow_redirects=False) as response,
        ):
            await response.read()
            return response.status
    except aiohttp.ClientError:
        return 0


async def serving(port: int) -> None:
    async def up() -> bool:
        return await status(port, "/healthz") == 200

    await until_true(up, 30)


START = "/oauth/start?state=never-issued"


async def test_http_mode_serves_the_pages_on_slacks_port(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    state: State,  # this test's keys are cleaned up afterwards
    processes: list[asyncio.subprocess.Process],
) -> None:
    port, worker_port = free_port(), free_port()
    env = environment(fake_slack, fake_llm, tmp_path, key_prefix, port)
    await spawn(processes, env, "run", "--workers", "0", "--port", str(port))
    await spawn(processes, env, "worker", "--processes", "0", "--metrics-port", str(worker_port))
    await serving(port)
    assert await status(port, START) == 410  # the start page: no such sign-in
    assert await status(port, "/oauth/callback?state=never-issued") == 400
    assert await status(port, "/oauth/client.json") == 200
    await serving(worker_port)
    assert await status(worker_port, START) == 404  # a worker serves no sign-in page
    assert await status(worker_port, "/metrics") == 200


async def test_socket_mode_serves_the_pages_on_its_port(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    fake_socket: FakeSocketMode,
    tmp_path: Path,
    key_prefix: str,
    state: State,
    processes: list[asyncio.subprocess.Process],
) -> None:
    port, metrics_port, alone = free_port(), free_port(), free_port()
    env = {
        **environment(fake_slack, fake_llm, tmp_path, key_prefix, port),
        "SLACK_APP_TOKEN": "xapp-test",
    }
    await spawn(
        processes,
        env,
        *("run", "--workers", "0", "--port", str(port), "--metrics-port", str(metrics_port)),
    )
    await spawn(processes, env, "run", "--workers", "0", "--port", str(alone))
    # With --metrics-port: --port serves the pages and /healthz, never /metrics.
    await serving(port)
    assert await status(port, START) == 410
    assert await status(port, "/metrics") == 404
    await serving(metrics_port)
    assert await status(metrics_port, "/metrics") == 200
    assert await status(metrics_port, START) == 404
    # Without: the endpoints' listener on --port serves them too.
    await serving(alone)
    assert await status(alone, START) == 410
    assert await status(alone, "/metrics") == 200
