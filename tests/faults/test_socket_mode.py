"""Socket Mode as it runs in production: real ``slack-agent run`` (and ``worker``) processes
against the fake Slack Web API, the fake Socket Mode server and the fake LLM.

- drops, resets, refreshes and warnings: every event answered exactly once, no envelope
  unacked for more than 3 s, and a refresh opens the new connection before the old closes;
- a refused app or bot token: exit 2 within 15 s, with a message naming the variable;
- SIGTERM while still connecting ends the process within the grace period;
- /healthz, /readyz and /metrics served in Socket Mode and by a worker (--metrics-port);
  in HTTP mode /metrics only on --metrics-port, never on Slack's public --port;
  /readyz flips to 503 while a real Redis is down, and back;
- ``link_disabled`` with the token refused afterwards: /readyz fails and says why.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from bot.process.state import State
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM, Reply, text
from tests.fakes.redis_server import PrivateRedis, free_port
from tests.fakes.slack_harness import app_environment, event_envelope, mention
from tests.fakes.slack_server import FakeSlack
from tests.fakes.socket_mode import Connection, FakeSocketMode
from tests.waiting import until, until_true

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

GRACE_S = 5.0
ACK_BOUND_S = 3.0
START_BOUND_S = 15.0


class Process:
    def __init__(self, process: asyncio.subprocess.Process, log: Path, port: int) -> None:
        self.process, self.log, self.port = process, log, port
        self.started_at = time.monotonic()

    @property
    def output(self) -> str:
        return self.log.read_text()

    async def endpoint(self, path: str) -> tuple[int, Any]:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{self.port}{path}") as response,
            ):
                body = await response.text()
                is_json = response.content_type == "application/json"
                return response.status, json.loads(body) if is_json else body
        except aiohttp.ClientError:
            return 0, None

    async def ready(self, status: int = 200, failing: str = "") -> bool:
        if self.process.returncode is not None:  # it will never be ready: say why at once
            raise AssertionError(f"exited {self.process.returncode}:\n{self.output[-4000:]}")
        code, body = await self.endpoint("/readyz")
        if code != status:
            return False
        return not failing or any(failing in line for line in body["failing"])

    async def sigterm(self) -> tuple[int, float]:
        """SIGTERM; the exit code and how long the process took to end."""
        sent = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(self.process.wait(), GRACE_S + 5)
        took = time.monotonic() - sent
        print(f"\nSIGTERM: exit {code} after {took:.2f} s")
        return code, took


@pytest.fixture
async def fake_socket(fake_slack: FakeSlack) -> AsyncIterator[FakeSocketMode]:
    server = FakeSocketMode(fake_slack)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def processes() -> AsyncIterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        # Shown with a failing test's report ("Captured stdout teardown"), else discarded.
        code = process.process.returncode
        print(f"\n--- {process.log.name}, exit {code}:\n{process.output[-4000:]}")
        if code is None:
            process.process.kill()
            await process.process.wait()


class Launcher:
    def __init__(
        self,
        processes: list[Process],
        fake_slack: FakeSlack,
        fake_llm: FakeLLM,
        tmp_path: Path,
        key_prefix: str,
    ) -> None:
        self.processes = processes
        self.slack, self.llm = fake_slack, fake_llm
        self.tmp_path, self.key_prefix = tmp_path, key_prefix

    async def start(
        self,
        *args: str,
        redis_url: str = REDIS_URL,
        port: int | None = None,
        socket_mode: bool = True,
        **config: Any,
    ) -> Process:
        settings: dict[str, Any] = {
            "redis": {"key_prefix": self.key_prefix},
            "llm": {"model": "fake-model", "max_retries": 0},
            "slack": {"streaming": False, "socket_connections": 2},
            "queue": {"shutdown_grace_s": GRACE_S},
        }
        for key, value in config.items():
            settings[key] = {**settings.get(key, {}), **value}
        number = len(self.processes) + 1
        path = self.tmp_path / f"agent-{number}.yaml"
        path.write_text(yaml.safe_dump(settings))
        env = app_environment(self.slack.api_url, self.llm.base_url, redis_url, path)
        if socket_mode:
            env["SLACK_APP_TOKEN"] = "xapp-test"
        port = port or free_port()
        log = self.tmp_path / f"process-{number}.log"
        with log.open("w") as sink:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot.cli", *args, env=env, stdout=sink, stderr=sink
            )
        started = Process(process, log, port)
        self.processes.append(started)
        return started

    async def run(self, **config: Any) -> Process:
        port = free_port()
        return await self.start("run", "--workers", "0", "--port", str(port), port=port, **config)


@pytest.fixture
def launch(
    processes: list[Process],
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    state: State,  # this test's keys are cleaned up afterwards
) -> Launcher:
    return Launcher(processes, fake_slack, fake_llm, tmp_path, key_prefix)


def answer_to(body: dict[str, Any]) -> Reply:
    asked = re.search(r"question [0-9.]+", str(body["messages"][-1]["content"]))
    return text(f"Answer to: {asked.group(0) if asked else '?'}")


def answers(fake_slack: FakeSlack, ts: str) -> list[str]:
    return [
        m.shown
        for m in fake_slack.thread("C0CHAN", ts)
        if not m.streaming and m.blocks and m.blocks[0].get("type") == "markdown"
    ]


def event(ts: str) -> dict[str, Any]:
    return event_envelope(mention(f"question {ts}", ts), f"Ev{ts}")


async def test_every_event_answered_once_through_drops_resets_and_refreshes(
    launch: Launcher, fake_slack: FakeSlack, fake_llm: FakeLLM, fake_socket: FakeSocketMode
) -> None:
    fake_llm.otherwise = answer_to
    fake_socket.close_after_s = 2.0
    app = await launch.run()
    await until_true(app.ready, 30)  # one connection open: the other may still be opening
    await until(lambda: len(fake_socket.open_connections) == 2, 30)

    sent: list[str] = []

    def send(count: int) -> None:
        for _ in range(count):
            ts = f"500.{len(sent) + 1:06d}"
            sent.append(ts)
            fake_socket.send_event(event(ts))

    faults = ["drop", "reset", "refresh_requested", "warning", "silence"] * 2
    for fault in faults:
        send(3)
        victim: Connection = usable(fake_socket)[0]
        if fault == "drop":
            await fake_socket.drop(victim)
        elif fault == "reset":
            fake_socket.reset(victim)
        elif fault == "silence":
            fake_socket.silence(victim)
        else:
            await fake_socket.refresh(victim, fault)
        send(3)
        await until(lambda victim=victim: not victim.open, 10)  # type: ignore[misc]
        await until(lambda: len(usable(fake_socket)) == 2, 15)

    await until(lambda: not fake_socket.unacked, 10)
    await until(lambda: all(answers(fake_slack, ts) for ts in sent), 30)
    for ts in sent:
        assert answers(fake_slack, ts) == [f"Answer to: question {ts}"], ts
    worst = fake_socket.max_unacked_s()
    assert worst < ACK_BOUND_S
    overlaps = refresh_overlaps(fake_socket)
    assert len(overlaps) == 4 and all(overlap > 0 for overlap in overlaps)
    assert fake_socket.offline_s() == 0.0  # one connection always took envelopes
    resent = sum(len(e.sent_on) > 1 for e in fake_socket.envelopes.values())
    silent = [
        c.closed_at - c.silenced_at
        for c in fake_socket.connections
        if c.silenced_at is not None and c.closed_at is not None
    ]
    print(
        f"\n{len(sent)} events, {resent} sent again after their connection ended; "
        f"longest unacked {worst:.3f} s; refreshes: new connection open "
        f"{', '.join(f'{o:.3f}' for o in overlaps)} s before the old one closed; "
        f"silent connections closed after {', '.join(f'{s:.1f}' for s in silent)} s"
    )
    code, took = await app.sigterm()
    assert code == 0 and took < GRACE_S
    assert "xapp-test" not in app.output and "xoxb-test" not in app.output


def usable(fake_socket: FakeSocketMode) -> list[Connection]:
    return [c for c in fake_socket.open_connections if not c.silent]


def refresh_overlaps(fake_socket: FakeSocketMode) -> list[float]:
    """For each refreshed connection: how long the replacement was open before it closed."""
    found = []
    for old in fake_socket.connections:
        if old.disconnect_sent not in ("refresh_requested", "warning"):
            continue
        assert old.disconnect_at is not None and old.closed_at is not None
        new = next(c for c in fake_socket.connections if c.opened_at > old.disconnect_at)
        found.append(old.closed_at - new.opened_at)
    return found


@pytest.mark.parametrize(
    ("method", "variable"),
    [("apps.connections.open", "SLACK_APP_TOKEN"), ("auth.test", "SLACK_BOT_TOKEN")],
)
async def test_a_refused_token_stops_start_up_with_exit_2(
    launch: Launcher, fake_slack: FakeSlack, fake_socket: FakeSocketMode, method: str, variable: str
) -> None:
    fake_slack.fail(method, "invalid_auth", times=1000)
    app = await launch.run()
    code = await asyncio.wait_for(app.process.wait(), START_BOUND_S + 5)
    took = time.monotonic() - app.started_at
    print(f"\n{method} refused: exit {code} {took:.2f} s after the process started")
    assert code == 2
    assert took < START_BOUND_S
    assert f"Slack refused {variable} ({method}: invalid_auth)" in app.output
    assert "Traceback" not in app.output


@pytest.mark.parametrize(
    "stuck", ["auth.test hangs", "auth.test hangs past the start check", "the socket cannot open"]
)
async def test_sigterm_while_connecting_ends_within_the_grace_period(
    launch: Launcher, fake_slack: FakeSlack, fake_socket: FakeSocketMode, stuck: str
) -> None:
    if stuck.startswith("auth.test hangs"):
        fake_slack.latency_s = 60
        app = await launch.run()
        # The start check gives up after 10 s and asks again for Bolt: a second call.
        calls = 2 if stuck.endswith("past the start check") else 1
        await until(lambda: len(fake_slack.calls_to("auth.test")) >= calls, 30)
    else:
        await fake_socket.stop()  # apps.connections.open answers; nothing listens there
        app = await launch.run()
        await until(lambda: len(fake_slack.calls_to("apps.connections.open")) >= 3, 30)
        _, body = await app.endpoint("/readyz")
        assert body["checks"]["worker"] == "ok" and body["checks"]["redis"] == "ok"
    # Still connecting: alive, not ready, and it says why.
    await until_true(lambda: app.ready(503, "socket: no Socket Mode connection to Slack is open"))
    assert (await app.endpoint("/healthz"))[0] == 200
    code, took = await app.sigterm()
    assert code == 0
    assert took < GRACE_S


async def test_readyz_follows_a_redis_outage_in_socket_mode_and_in_a_worker(
    launch: Launcher, fake_socket: FakeSocketMode, private_redis: PrivateRedis
) -> None:
    app = await launch.run(redis_url=private_redis.url)
    metrics_port = free_port()
    worker = await launch.start(
        "worker",
        "--processes",
        "0",
        "--metrics-port",
        str(metrics_port),
        redis_url=private_redis.url,
        port=metrics_port,
    )
    for process in (app, worker):
        await until_true(process.ready, 30)
        code, body = await process.endpoint("/metrics")
        assert code == 200 and "python_info" in body  # the default registry
        assert (await process.endpoint("/healthz"))[0] == 200
    _, body = await app.endpoint("/readyz")
    assert set(body["checks"]) == {"redis", "worker", "socket"}
    assert await docker_healthcheck(app.port) == 0

    private_redis.stop()
    for process in (app, worker):
        await until_true(lambda p=process: p.ready(503, "redis: unreachable"), 20)  # type: ignore[misc]
        code, body = await process.endpoint("/healthz")  # alive all the same
        assert code == 200 and body["redis"].startswith("unreachable")

    private_redis.start()
    for process in (app, worker):
        await until_true(process.ready, 20)
    for process in (app, worker):
        code, took = await process.sigterm()
        assert code == 0 and took < GRACE_S


async def test_sigterm_during_a_redis_outage_ends_within_the_grace_period(
    launch: Launcher, fake_socket: FakeSocketMode, private_redis: PrivateRedis
) -> None:
    app = await launch.run(redis_url=private_redis.url)
    await until_true(app.ready, 30)
    private_redis.stop()
    await until_true(lambda: app.ready(503, "redis: unreachable"), 20)
    code, took = await app.sigterm()
    assert code == 0 and took < GRACE_S


async def test_http_mode_serves_metrics_only_on_the_metrics_port(launch: Launcher) -> None:
    app_port, metrics_port = free_port(), free_port()
    app = await launch.start(
        "run",
        *("--workers", "0", "--port", str(app_port), "--metrics-port", str(metrics_port)),
        port=metrics_port,
        socket_mode=False,
    )
    await until_true(app.ready, 30)
    for port in (app_port, metrics_port):
        app.port = port
        code, body = await app.endpoint("/readyz")
        assert code == 200 and set(body["checks"]) == {"redis", "worker"}
        assert (await app.endpoint("/healthz"))[0] == 200
    # Slack's events port is public: no /metrics there.
    app.port = app_port
    assert (await app.endpoint("/metrics"))[0] == 404
    app.port = metrics_port
    code, body = await app.endpoint("/metrics")
    assert code == 200 and "python_info" in body
    code, took = await app.sigterm()
    assert code == 0 and took < GRACE_S


DOCKERFILE = Path(__file__).parents[2] / "Dockerfile"


async def docker_healthcheck(port: int) -> int:
    """The Dockerfile's HEALTHCHECK command against ``port``, which stands in for the port
    the image's CMD gives ``slack-agent run`` (the check and the CMD must agree)."""
    lines = DOCKERFILE.read_text().splitlines()
    check = next(line for line in lines if line.startswith("HEALTHCHECK"))
    command = next(line for line in lines if line.startswith("CMD"))
    image_port = json.loads(command.removeprefix("CMD").strip())[-1]
    shell = check.split(" CMD ", 1)[1]
    assert f"127.0.0.1:{image_port}/healthz" in shell
    process = await asyncio.create_subprocess_shell(
        shell.replace(f":{image_port}/", f":{port}/").replace("python ", f"{sys.executable} ", 1)
    )
    return await asyncio.wait_for(process.wait(), 10)


async def test_link_disabled_fails_readiness_and_says_why(
    launch: Launcher, fake_slack: FakeSlack, fake_socket: FakeSocketMode
) -> None:
    app = await launch.run()
    await until_true(app.ready, 30)
    # Both slots open before Slack refuses: a slot still opening would open after the
    # refusal and (rightly) clear it, since the app then takes events again.
    await until(lambda: len(fake_socket.open_connections) == 2, 30)
    fake_slack.fail("apps.connections.open", "invalid_auth", times=1000)
    for connection in fake_socket.open_connections:
        await fake_socket.refresh(connection, "link_disabled")
    await until_true(lambda: app.ready(503, "socket: Slack refuses the Socket Mode connection"), 10)
    await until(lambda: "Slack refuses the Socket Mode connection" in app.output, 10)
    assert app.output.count("Slack refuses the Socket Mode connection") == 1
    code, took = await app.sigterm()
    assert code == 0 and took < GRACE_S
