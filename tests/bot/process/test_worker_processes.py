"""``run --workers N`` and ``worker --processes N`` as real processes: one ingress (or none)
and N worker processes under a supervisor, against the fake Slack, the fake LLM and the
test Redis (this test's own key prefix).

- the ingress acks and queues, the worker processes answer; /readyz, /healthz and /metrics
  on the supervisor reflect them;
- a worker process SIGKILLed mid-turn is started again, and the turn is answered once
  (another worker process takes it over after its lease);
- a SIGKILLed supervisor leaves no worker process alive;
- SIGTERM: the turn running finishes within the grace period, every process exits 0;
- turn work that holds a worker process's event loop does not hold the ingress's acks (it
  does with ``--workers 0``, where they share the loop);
- every worker process runs a scheduler: a schedule due is fired once, by one of them.
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
from bot.schedules.recurrence import Recurrence
from bot.state.schedules import Schedule, epoch_text
from tests.conftest import REDIS_URL, RedisUnderTest
from tests.fakes.llm_server import FakeLLM, Reply, calls, text
from tests.fakes.redis_server import free_port
from tests.fakes.slack_harness import app_environment, event_envelope, mention, signed_headers
from tests.fakes.slack_server import FakeSlack
from tests.process_tree import children_of, kill_all, running
from tests.waiting import until, until_true

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]

LEASE_S = 2  # queue.lock_ttl_s and queue.claim_idle_s: a dead worker's turn is taken soon
GRACE_S = 8.0


class App:
    """One ``slack-agent`` process started by a test, its output in a file."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path, port: int) -> None:
        self.process, self.log, self.port = process, log, port

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def workers(self) -> list[int]:
        return children_of(self.pid)

    async def endpoint(self, path: str, port: int | None = None) -> tuple[int, Any]:
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3)) as session,
                session.get(f"http://127.0.0.1:{port or self.port}{path}") as response,
            ):
                body = await response.text()
                is_json = response.content_type == "application/json"
                return response.status, json.loads(body) if is_json else body
        except (aiohttp.ClientError, TimeoutError):
            return 0, None

    def looping(self) -> set[int]:
        """The pids of the worker processes whose worker loop has started (they log it)."""
        return {
            int(pid)
            for pid in re.findall(r"consumer: worker [^ ]+-(\d+)-[0-9a-f]+ started", self.output)
        }

    async def workers_report(self) -> dict[str, int] | None:
        code, body = await self.endpoint("/healthz")
        return body.get("workers") if code == 200 else None

    async def ready_with(self, alive: int, restarts: int = 0) -> bool:
        """/readyz says ready, /healthz reports ``alive`` worker processes and ``restarts``,
        and that many children run."""
        code, _ = await self.endpoint("/readyz")
        report = await self.workers_report()
        return (
            code == 200
            and report is not None
            and report["alive"] == alive
            and report["restarts"] == restarts
            and len(self.workers()) == alive
        )


@pytest.fixture
async def apps() -> AsyncIterator[list[App]]:
    started: list[App] = []
    yield started
    for app in started:  # whatever happened: no process of the test outlives it
        kill_all(app.workers(), signal.SIGKILL)
        if app.process.returncode is None:
            app.process.kill()
            await app.process.wait()


class Launcher:
    def __init__(
        self,
        apps: list[App],
        fake_slack: FakeSlack,
        fake_llm: FakeLLM,
        tmp_path: Path,
        key_prefix: str,
        redis_url: str = REDIS_URL,
        redis: dict[str, Any] | None = None,
    ) -> None:
        """``redis``: more of the config's ``redis`` section (``cluster: true``)."""
        self.apps, self.tmp_path = apps, tmp_path
        self.slack, self.llm = fake_slack, fake_llm
        self.redis_url = redis_url
        self.settings: dict[str, Any] = {
            "redis": {"key_prefix": key_prefix, **(redis or {})},
            "llm": {"model": "fake-model", "max_retries": 0},
            "slack": {"streaming": False},
            "queue": {"lock_ttl_s": LEASE_S, "claim_idle_s": LEASE_S, "shutdown_grace_s": GRACE_S},
            "tools": {"modules": ["tests.fakes.loop_hog_tools"]},
        }
        self.hog_marker = tmp_path / "holding-the-loop"

    async def start(self, *args: str, port: int, queue: dict[str, float] | None = None) -> App:
        number = len(self.apps) + 1
        settings = {**self.settings, "queue": {**self.settings["queue"], **(queue or {})}}
        config = self.tmp_path / f"agent-{number}.yaml"
        config.write_text(yaml.safe_dump(settings))
        env = app_environment(
            self.slack.api_url,
            self.llm.base_url,
            self.redis_url,
            config,
            LOOP_HOG_MARKER=str(self.hog_marker),
            PYTHONUNBUFFERED="1",
        )
        log = self.tmp_path / f"process-{number}.log"
        with log.open("w") as sink:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot.cli",
                *args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
            )
        app = App(process, log, port)
        self.apps.append(app)
        return app

    async def run(self, workers: int, queue: dict[str, float] | None = None) -> tuple[App, int]:
        """``run --workers N`` in HTTP mode; the app and its --metrics-port."""
        port, metrics_port = free_port(), free_port()
        app = await self.start(
            "run",
            *("--workers", str(workers), "--port", str(port), "--metrics-port", str(metrics_port)),
            port=port,
            queue=queue,
        )
        return app, metrics_port


@pytest.fixture
def launch(
    apps: list[App],
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    redis_under_test: RedisUnderTest,  # the single Redis, or the cluster for [cluster]
    state: State,  # this test's keys are cleaned up afterwards
) -> Launcher:
    redis = redis_under_test
    return Launcher(apps, fake_slack, fake_llm, tmp_path, key_prefix, redis.url, redis.settings)


async def send_mention(port: int, message: str, ts: str) -> tuple[int, float]:
    body = json.dumps(event_envelope(mention(message, ts), f"Ev{ts}"))
    started = time.monotonic()
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{port}/slack/events", data=body, headers=signed_headers(body)
        ) as response,
    ):
        return response.status, time.monotonic() - started


def answers(fake_slack: FakeSlack, ts: str) -> list[str]:
    return [
        m.shown
        for m in fake_slack.thread("C0CHAN", ts)
        if not m.streaming and m.blocks and m.blocks[0].get("type") == "markdown"
    ]


async def consumer_pids(state: State) -> set[int]:
    """The pids of every process that ever read the queue (a consumer stays in the group)."""
    pids: set[int] = set()
    for shard in state.keys.shards.all():
        consumers = await state.client.xinfo_consumers(state.keys.turns(shard), state.keys.workers)
        pids |= {int(c["name"].split("-")[-2]) for c in consumers}
    return pids


async def owner_pid(state: State) -> int | None:
    """The pid of the worker process holding the one turn in the queue, if one does."""
    for shard in state.keys.shards.all():
        pending = await state.client.xpending_range(
            state.keys.turns(shard), state.keys.workers, min="-", max="+", count=10
        )
        if pending:
            return int(pending[0]["consumer"].split("-")[-2])
    return None


def on_uvloop(pid: int) -> bool:
    """Whether process ``pid`` has uvloop's event loop library loaded."""
    return "uvloop/loop." in Path(f"/proc/{pid}/maps").read_text()


async def queue_empty(state: State) -> bool:
    return (await state.threads.queue.depth())[0] == 0


async def test_run_with_worker_processes_answers_and_reports_them(
    launch: Launcher, fake_slack: FakeSlack, fake_llm: FakeLLM, state: State
) -> None:
    fake_llm.add(text("Answered by a worker process."))
    app, metrics_port = await launch.run(workers=2)
    await until_true(lambda: app.ready_with(alive=2), 40)
    _, body = await app.endpoint("/readyz")
    assert body["checks"] == {"redis": "ok", "worker": "ok"}
    status, _ = await send_mention(app.port, "who answers?", "700.000001")
    assert status == 200
    await until(lambda: answers(fake_slack, "700.000001") == ["Answered by a worker process."], 30)
    # The ingress only acked and queued: only the worker processes ever read the queue.
    workers = set(app.workers())
    assert await consumer_pids(state) <= workers and app.pid not in await consumer_pids(state)
    # Every process of the app runs its event loop on uvloop (bot/process/event_loop.py).
    assert all(on_uvloop(pid) for pid in {app.pid, *workers})

    async def counted() -> bool:
        code, text_body = await app.endpoint("/metrics", metrics_port)
        return code == 200 and 'slack_agent_turns_total{outcome="answered"} 1.0' in text_body

    await until_true(counted, 10)  # a worker process's counter, on the supervisor's /metrics
    _, text_body = await app.endpoint("/metrics", metrics_port)
    assert "slack_agent_worker_processes 2.0" in text_body
    assert "python_info" in text_body  # the supervisor's own registry too
    assert text_body.count("# TYPE slack_agent_turns_total counter") <= 1
    app.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(app.process.wait(), 30) == 0
    assert "supervising 2 worker process(es)" in app.output


@pytest.mark.cluster
async def test_a_killed_worker_process_is_restarted_and_its_turn_answered_once(
    launch: Launcher, fake_slack: FakeSlack, fake_llm: FakeLLM, state: State
) -> None:
    # The first attempt hangs in its model call until its worker process is killed; the
    # worker process that takes the turn over gets an answer at once.
    fake_llm.add(text("The first attempt's answer.", delay_s=30))
    fake_llm.otherwise = text("Answered once.")
    app, _ = await launch.run(workers=2)
    await until_true(lambda: app.ready_with(alive=2), 40)
    before = app.workers()
    assert (await send_mention(app.port, "question", "701.000001"))[0] == 200
    await fake_llm.wait_for_requests(1)
    victim = await owner_pid(state)
    assert victim in before
    killed_at = time.monotonic()
    kill_all([victim], signal.SIGKILL)
    await until(lambda: answers(fake_slack, "701.000001") == ["Answered once."], 30)
    took = time.monotonic() - killed_at
    await until_true(lambda: queue_empty(state), 10)  # the turn is done, nothing pending
    # Restarted: two worker processes again, a new one in the victim's place.
    await until_true(lambda: app.ready_with(alive=2, restarts=1), 20)
    after = app.workers()
    assert victim not in after and len(set(after) - set(before)) == 1
    assert f"(pid {victim}) was killed by SIGKILL" in app.output
    assert answers(fake_slack, "701.000001") == ["Answered once."]
    assert len(fake_llm.requests) == 2
    print(f"\nworker process killed mid-turn: answered by another {took:.2f} s later")
    app.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(app.process.wait(), 30) == 0


async def test_a_killed_supervisor_leaves_no_worker_process(launch: Launcher) -> None:
    app, _ = await launch.run(workers=2)
    await until_true(lambda: app.ready_with(alive=2), 40)
    workers = app.workers()
    assert len(workers) == 2
    app.process.kill()
    await app.process.wait()
    await until(lambda: not any(running(pid) for pid in workers), 10)


async def test_sigterm_lets_the_running_turn_finish_then_every_process_exits(
    launch: Launcher, fake_slack: FakeSlack, fake_llm: FakeLLM, state: State
) -> None:
    fake_llm.add(text("Finished within the grace period.", delay_s=1.5))
    app, _ = await launch.run(workers=2)
    await until_true(lambda: app.ready_with(alive=2), 40)
    workers = app.workers()
    await until(lambda: app.looping() == set(workers), 30)  # each has its signal handlers
    assert (await send_mention(app.port, "question", "702.000001"))[0] == 200
    await fake_llm.wait_for_requests(1)
    sent = time.monotonic()
    app.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(app.process.wait(), GRACE_S + 15) == 0
    took = time.monotonic() - sent
    assert answers(fake_slack, "702.000001") == ["Finished within the grace period."]
    assert not any(running(pid) for pid in workers)
    for pid in workers:
        assert f"(pid {pid}) stopped: exited with code 0" in app.output
    assert "handing" not in app.output  # nothing had to be handed back
    print(f"\nSIGTERM with a turn running: every process ended {took:.2f} s later")


async def test_worker_processes_without_ingress(
    launch: Launcher, fake_slack: FakeSlack, fake_llm: FakeLLM, state: State
) -> None:
    fake_llm.add(text("Answered without an ingress beside me."))
    port = free_port()
    ingress = await launch.start("run", "--no-worker", "--port", str(port), port=port)
    metrics_port = free_port()
    workers = await launch.start(
        "worker", "--processes", "2", "--metrics-port", str(metrics_port), port=metrics_port
    )
    await until_true(lambda: workers.ready_with(alive=2), 40)
    await until_true(lambda: ingress_ready(ingress), 30)
    assert (await send_mention(port, "who answers?", "703.000001"))[0] == 200
    await until(
        lambda: answers(fake_slack, "703.000001") == ["Answered without an ingress beside me."],
        30,
    )
    assert await consumer_pids(state) <= set(workers.workers())
    for app in (workers, ingress):
        app.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(app.process.wait(), 30) == 0


async def test_worker_processes_fire_a_schedule_once(
    launch: Launcher, fake_slack: FakeSlack, fake_llm: FakeLLM, state: State
) -> None:
    """Each worker process runs a scheduler beside its worker; one of them fires the run
    (its claim names it), which its worker processes answer under the headline."""
    fake_llm.add(text("Fired by a worker process."))
    app, metrics_port = await launch.run(workers=2)
    await until_true(lambda: app.ready_with(alive=2), 40)
    store = state.shared.schedules
    due = time.time()
    made = await store.create(
        team="T0TEAM",
        owner="U0ALICE",
        channel="C0CHAN",
        prompt="Say hello.",
        recurrence=Recurrence("0 * * * *", None, "UTC"),
        next_at=due,
        max_per_person=10,
        by="U0ALICE",
    )
    assert isinstance(made, Schedule)

    def headlines() -> list[str]:
        return [m.ts for m in fake_slack.top_level("C0CHAN")]

    await until(lambda: len(headlines()) == 1, 20)
    [headline] = headlines()
    await until(lambda: answers(fake_slack, headline) == ["Fired by a worker process."], 30)
    firing = state.keys.schedule_firing(made.id, epoch_text(due))
    holder = await state.client.hget(firing, "holder")
    assert int(str(holder).split("-")[-2]) in app.workers()  # a worker process, not the ingress

    async def counted() -> bool:
        code, body = await app.endpoint("/metrics", metrics_port)
        return (
            code == 200
            and 'slack_agent_schedule_runs_total{outcome="fired"} 1.0' in body
            and "slack_agent_schedules_active 1.0" in body
        )

    await until_true(counted, 10)
    assert len(headlines()) == 1 and len(fake_llm.requests) == 1  # once, by one of them
    app.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(app.process.wait(), 30) == 0


async def ingress_ready(app: App) -> bool:
    code, _ = await app.endpoint("/readyz")
    return code == 200


HOLD_S = 3.0
LONG_LEASE: dict[str, float] = {"lock_ttl_s": 30, "claim_idle_s": 30}  # held loops renew no lease


def hold_then_answer(request: dict[str, Any]) -> Reply:
    """ "hold it": hold the loop, then say "Held."; anything else: "Second."."""
    messages = request["messages"]
    asked = json.dumps([m for m in messages if m["role"] == "user"][-1])
    if "hold it" not in asked:
        return text("Second.")
    if any(m["role"] == "tool" for m in messages):
        return text("Held.")
    return calls(("hold_the_loop", {"seconds": HOLD_S}))


@pytest.mark.parametrize("workers", [1, 0])
async def test_turn_work_holding_a_loop_holds_acks_only_in_a_single_process(
    launch: Launcher, fake_slack: FakeSlack, fake_llm: FakeLLM, workers: int
) -> None:
    # Answered by what each turn asked, not in the order the requests come: once the loop is
    # let go, the held turn's next call and the second turn's first may come either way.
    fake_llm.otherwise = hold_then_answer
    app, _ = await launch.run(workers=workers, queue=LONG_LEASE)
    if workers:
        await until_true(lambda: app.ready_with(alive=workers), 40)
    else:
        await until_true(lambda: ingress_ready(app), 40)
    assert (await send_mention(app.port, "hold it", "704.000001"))[0] == 200
    await until(launch.hog_marker.exists, 20)  # the turn's tool now holds its loop
    status, ack_s = await send_mention(app.port, "another question", "705.000001")
    assert status == 200
    print(f"\n--workers {workers}: ack while a turn holds its loop {ack_s * 1000:.0f} ms")
    if workers:
        assert ack_s < 1.0  # the ingress's loop is its own
    else:
        assert ack_s > 1.0  # the ack waited for the turn's tool to let go
    await until(lambda: answers(fake_slack, "705.000001") == ["Second."], 30)
    app.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(app.process.wait(), 30) == 0
