"""A worker process killed with SIGKILL mid-turn: another worker claims the turn, resumes it
from what was saved, and exactly one answer results."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from bot.process.state import State
from bot.turn.model import QueuedTurn, Turn
from bot.turn.states import TurnState
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results
from tests.fakes.worker_kit import build_worker, delivered_texts
from tests.waiting import until_true

StartWorker = Callable[[], Awaitable[asyncio.subprocess.Process]]


@pytest.fixture
async def doomed_worker(
    fake_llm: FakeLLM, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[StartWorker]:
    """Start a worker in its own process (the step tool writes to this test's keys)."""
    monkeypatch.setenv("STEP_REDIS_URL", REDIS_URL)
    monkeypatch.setenv("STEP_RUNS_KEY", key_prefix + "runs")
    processes: list[asyncio.subprocess.Process] = []

    async def start() -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.fakes.worker_process",
            REDIS_URL,
            key_prefix,
            fake_llm.base_url,
        )
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def survive(fake_llm: FakeLLM, state: State, prefix: str, queued: QueuedTurn) -> list[str]:
    """Run a second worker until it has finished the turn; return every delivery."""
    survivor, own_state = build_worker(REDIS_URL, prefix, fake_llm.base_url, name="survivor")
    stop = asyncio.Event()
    task = asyncio.create_task(survivor.run(stop))

    async def finished() -> bool:
        """The turn's last move has happened: its record is done, which in the same step
        acknowledged and deleted its queue entry and, nothing else being queued in the
        thread, freed the thread's lock. Nothing is left that could answer it again."""
        record = await state.threads.records.read(queued.entry_id)
        lock = state.keys.lock(queued.turn.thread_key)
        return (
            record is not None
            and record.state is TurnState.DONE
            and (await state.threads.queue.depth())[0] == 0
            and await state.threads.queue.pending_count() == 0
            and not await state.client.exists(lock)
        )

    try:
        await until_true(finished, timeout=30)
    finally:
        stop.set()
        await asyncio.wait_for(task, 40)
        await own_state.aclose()
    return await delivered_texts(state, prefix + "delivered")


async def audited_calls(state: State) -> list[tuple[str, str]]:
    """Each tool-call audit entry as (call id, outcome), sorted."""
    entries = await state.shared.audit.latest(50)
    return sorted((e.detail["call"], e.outcome) for e in entries if e.kind == "tool")


async def enqueue(state: State, turn: Turn) -> QueuedTurn:
    entry_id = await state.threads.queue.enqueue(turn)
    assert entry_id is not None
    return QueuedTurn(entry_id, turn)


async def test_killed_while_the_model_answers(
    fake_llm: FakeLLM,
    make_state: Callable[..., State],
    key_prefix: str,
    doomed_worker: StartWorker,
) -> None:
    state = make_state()
    fake_llm.add(
        calls(("step", {"name": "a"}, "ca"), ("step", {"name": "b"}, "cb")),
        text("the first worker never says this", delay_s=60),
        lambda request: text(f"final: {sorted(tool_results(request).values())}"),
    )
    process = await doomed_worker()
    queued = await enqueue(state, Turn("T1", "C1", "900.1", "U1", "do both steps", "900.1", "EvK1"))
    await fake_llm.wait_for_requests(2)  # both tools ran; the model is answering
    process.send_signal(signal.SIGKILL)
    await process.wait()
    assert sorted(await state.client.lrange(key_prefix + "runs", 0, -1)) == ["a", "b"]
    # Both calls are audited already, with their journaled results: the turn never settled.
    assert await audited_calls(state) == [("ca", "ok"), ("cb", "ok")]

    answers = await survive(fake_llm, state, key_prefix, queued)
    assert answers == ["final: ['step a done', 'step b done']"]
    # The survivor settled the turn and audited neither again.
    assert await audited_calls(state) == [("ca", "ok"), ("cb", "ok")]
    # Neither tool ran again.
    assert sorted(await state.client.lrange(key_prefix + "runs", 0, -1)) == ["a", "b"]
    resumed = fake_llm.requests[2]["messages"]
    assert [m["role"] for m in resumed].count("user") == 1  # the user message only once
    [stored] = await state.threads.history.load_turns(Turn("T1", "C1", "900.1", "", "").thread_key)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "tool", "assistant"]
    assert await state.threads.queue.pending_count() == 0
    assert len(fake_llm.requests) == 3


async def test_killed_while_a_tool_runs(
    fake_llm: FakeLLM,
    make_state: Callable[..., State],
    key_prefix: str,
    doomed_worker: StartWorker,
) -> None:
    state = make_state()
    fake_llm.add(
        calls(("step", {"name": "a"}, "ca"), ("step", {"name": "b", "wait": True}, "cb")),
        lambda request: text(f"final: {json.dumps(sorted(tool_results(request)))}"),
    )
    process = await doomed_worker()
    queued = await enqueue(state, Turn("T1", "C1", "901.1", "U1", "do both steps", "901.1", "EvK2"))

    async def a_saved_while_b_runs() -> bool:
        keys = [k async for k in state.client.scan_iter(match=f"{key_prefix}turn:*:journal")]
        # user message, assistant calls, a's result; and b has started (the two calls run
        # at once, so a may be saved before b is under way)
        runs = await state.client.lrange(key_prefix + "runs", 0, -1)
        return bool(keys) and await state.client.llen(keys[0]) >= 3 and "b" in runs

    await until_true(a_saved_while_b_runs)
    assert sorted(await state.client.lrange(key_prefix + "runs", 0, -1)) == ["a", "b"]
    process.send_signal(signal.SIGKILL)
    await process.wait()
    assert await audited_calls(state) == [("ca", "ok")]  # with its saved result

    await state.client.set(key_prefix + "runs:release", "1")  # b may finish when it reruns
    assert await survive(fake_llm, state, key_prefix, queued) == ['final: ["ca", "cb"]']
    # "b" was cut off by the crash and ran again; "a" had finished and did not.
    assert sorted(await state.client.lrange(key_prefix + "runs", 0, -1)) == ["a", "b", "b"]
    # One entry a run: a's (saved by the killed worker), b's run the kill cut off (audited
    # when the survivor claimed b for its run again) and that run again.
    assert await audited_calls(state) == [("ca", "ok"), ("cb", "Interrupted"), ("cb", "ok")]
    assert len(fake_llm.requests) == 2  # the first round was not asked for again
    assert os.environ["STEP_RUNS_KEY"] == key_prefix + "runs"
