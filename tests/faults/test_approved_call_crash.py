"""Approved means once: a call a person approved runs at most once on that approval. Its worker
process is SIGKILLed while the call runs; the worker process that takes the turn over does
not run it again, although the tool says it is safe to repeat (``idempotent``); the model
is told it was interrupted and may or may not have taken effect.

A real ``slack-agent run --workers 2`` (an ingress and two worker processes), the fake Slack
and model, the test's Redis; the card is clicked with a signed request, as Slack sends it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
import yaml

from bot.process.state import State
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results
from tests.fakes.redis_server import free_port
from tests.fakes.slack_harness import (
    app_environment,
    button_click,
    event_envelope,
    is_approval_card,
    mention,
    signed_headers,
)
from tests.fakes.slack_server import FakeSlack, Message
from tests.process_tree import children_of, kill_all
from tests.waiting import until, until_true

pytestmark = [pytest.mark.faults, pytest.mark.timeout(58)]

LEASE_S = 2  # queue.lock_ttl_s and claim_idle_s: the killed worker's turn is taken over soon
THREAD = "730.000001"


@pytest.fixture
async def app(
    fake_slack: FakeSlack, fake_llm: FakeLLM, key_prefix: str, tmp_path: Path, state: State
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int, str]]:
    """``slack-agent run --workers 2``; ``step`` (which holds until released, and notes each
    start in Redis) needs a person's approval by ``approval.tools``. Yields the process, its
    port and the Redis list of the step's starts."""
    runs_key = f"{key_prefix}step-runs"
    config = tmp_path / "agent.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "redis": {"key_prefix": key_prefix},
                "llm": {"model": "fake-model", "max_retries": 0},
                "slack": {"streaming": False},
                "queue": {"lock_ttl_s": LEASE_S, "claim_idle_s": LEASE_S},
                "tools": {"modules": ["tests.fakes.step_tools"]},
                "approval": {"tools": ["step"]},
            }
        )
    )
    port = free_port()
    env = app_environment(
        fake_slack.api_url,
        fake_llm.base_url,
        REDIS_URL,
        config,
        STEP_REDIS_URL=REDIS_URL,
        STEP_RUNS_KEY=runs_key,
        PYTHONUNBUFFERED="1",
    )
    with (tmp_path / "run.log").open("w") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            *("run", "--workers", "2", "--port", str(port), "--metrics-port", str(free_port())),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        yield process, port, runs_key
    finally:
        kill_all(children_of(process.pid), signal.SIGKILL)
        if process.returncode is None:
            process.kill()
            await process.wait()
        await state.client.delete(runs_key, runs_key + ":release")


async def post(port: int, body: str, content_type: str) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{port}/slack/events",
            data=body,
            headers=signed_headers(body, content_type),
        ) as response,
    ):
        return response.status


async def ready(port: int) -> bool:
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
            session.get(f"http://127.0.0.1:{port}/readyz") as response,
        ):
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


async def owner_pid(state: State) -> int | None:
    """The pid of the worker process holding the turn (its consumer name ends in it)."""
    for shard in state.keys.shards.all():
        pending = await state.client.xpending_range(
            state.keys.turns(shard), state.keys.workers, min="-", max="+", count=10
        )
        if pending:
            return int(pending[0]["consumer"].split("-")[-2])
    return None


def answers(fake_slack: FakeSlack) -> list[Message]:
    """The turn's answer: the model's last words ("Told: " and the call's result)."""
    return [
        m
        for m in fake_slack.thread("C0CHAN", THREAD)
        if not m.streaming and m.shown.startswith("Told: ")
    ]


async def test_an_approved_call_cut_off_by_a_crash_is_not_run_again(
    app: tuple[asyncio.subprocess.Process, int, str],
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    state: State,
) -> None:
    process, port, runs_key = app
    fake_llm.add(
        calls(("step", {"name": "transfer", "wait": True}, "s1")),
        lambda request: text(f"Told: {tool_results(request)['s1']}"),
    )
    await until_true(lambda: ready(port), 30)
    body = json.dumps(event_envelope(mention("send the money", THREAD), "Ev730"))
    assert await post(port, body, "application/json") == 200
    await until(lambda: any(is_approval_card(m) for m in fake_slack.thread("C0CHAN", THREAD)))
    [card] = [m for m in fake_slack.thread("C0CHAN", THREAD) if is_approval_card(m)]
    [request_id] = [
        element["value"]
        for block in card.blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
        if element.get("action_id") == "approval_approve"
    ]
    assert await state.client.llen(runs_key) == 0  # nothing ran before the click
    click = button_click(
        "approval_approve", request_id, "U0ALICE", card.ts, fake_slack.response_url
    )
    form = urlencode({"payload": json.dumps(click)})
    assert await post(port, form, "application/x-www-form-urlencoded") == 200

    async def started() -> bool:
        return int(await state.client.llen(runs_key)) == 1

    await until_true(started, 20)  # approved: the call runs, and holds
    victim = await owner_pid(state)
    assert victim is not None and victim in children_of(process.pid)
    kill_all([victim], signal.SIGKILL)  # mid-call, after the approval

    await until(lambda: bool(answers(fake_slack)), 30)  # another worker process finishes it
    [answer] = answers(fake_slack)
    told = json.loads(answer.shown.removeprefix("Told: "))
    assert told["error"] == "Interrupted"
    assert told["message"] == (
        "step was approved and started, then interrupted when the worker running it stopped: "
        "it may or may not have taken effect. It does not run again on that approval; check "
        "before calling it again, which asks a person anew."
    )
    assert await state.client.lrange(runs_key, 0, -1) == ["transfer"]  # it ran once
    assert len(fake_llm.requests) == 2
    assert tool_results(fake_llm.requests[1])["s1"] == answer.shown.removeprefix("Told: ")
