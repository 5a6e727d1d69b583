"""The turn lifecycle with two in-process workers on the real Redis: lock loss, hand back at
shutdown, a stuck sync tool, and a live long turn that is never taken over."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from bot.llm.response import ModelResponse, ToolCall
from bot.process.state import State
from bot.turn.model import Turn
from bot.turn.states import TurnState
from bot.turn.worker.consumer import Worker
from tests.fakes.function_model import FunctionModel
from tests.fakes.worker_kit import MemoryResponder, make_worker
from tests.waiting import until, until_true
from tools import tool

FAST = {"lock_ttl_s": 1.2, "claim_idle_s": 1.0}


def turn_in(thread: str, text: str, ts: str) -> Turn:
    return Turn("T1", "C1", thread, "U1", text, message_ts=ts, event_id=f"Ev{ts}")


class Tools:
    """Two tools: ``first`` returns at once; ``second`` waits until released (or forever)."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.release = asyncio.Event()
        self.sync_release = threading.Event()

        @tool
        async def first() -> str:
            """Return at once."""
            self.runs.append("first")
            return "first done"

        @tool
        async def second() -> str:
            """Wait until the test says so."""
            self.runs.append("second")
            await self.release.wait()
            return "second done"

        @tool
        def stuck() -> str:
            """A sync tool that blocks its thread."""
            self.runs.append("stuck")
            self.sync_release.wait(30)
            return "unstuck"

        self.all = [first, second, stuck]


def two_rounds(second_tool: str = "second") -> FunctionModel:
    """Round 1: ``first``; round 2: ``second_tool``; then the answer names the results."""

    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if not results:
            return ModelResponse("", [ToolCall("c1", "first", "{}")])
        if len(results) == 1:
            return ModelResponse("", [ToolCall("c2", second_tool, "{}")])
        return ModelResponse("answer after " + " + ".join(results))

    return FunctionModel(respond)


@asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[asyncio.Event]:
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(task, 40)


async def started_second(state: State, entry_id: str) -> bool:
    record = await state.threads.records.read(entry_id)
    return record is not None and len(record.journal) >= 4  # user, c1, its result, c2


async def test_a_worker_that_loses_its_lock_stops_and_the_turn_is_answered_once(
    make_state: Callable[..., State],
) -> None:
    state = make_state(queue=FAST)
    tools, responder = Tools(), MemoryResponder()
    loser = make_worker(state, two_rounds(), responder, tools=tools.all, name="loser")
    turn = turn_in("L", "question", "10.1")
    async with running(loser):
        entry_id = await state.threads.queue.enqueue(turn)
        assert entry_id
        await until_true(lambda: started_second(state, entry_id))
        # Someone else holds the thread now (as after an expiry the owner did not notice).
        await state.client.set(state.keys.lock(turn.thread_key), "another-owner", px=1500)
        await until(lambda: not loser.active, timeout=10)
        record = await state.threads.records.read(entry_id)
        assert record is not None and record.state is TurnState.RUNNING
        assert responder.delivered == []
    # The next owner resumes from the journal: "first" is not run again, "second" once more.
    tools.release.set()
    finisher = make_worker(state, two_rounds(), responder, tools=tools.all, name="finisher")
    async with running(finisher):
        await until(lambda: len(responder.delivered) == 1, timeout=15)
    assert responder.texts() == ["answer after first done + second done"]
    assert tools.runs == ["first", "second", "second"]
    assert await state.threads.queue.pending_count() == 0


async def test_shutdown_hands_an_unfinished_turn_back_at_once(
    make_state: Callable[..., State],
) -> None:
    # A long takeover time: only handing back lets the other worker in quickly.
    state = make_state(queue={"lock_ttl_s": 30, "claim_idle_s": 30})
    tools, responder = Tools(), MemoryResponder()
    leaving = make_worker(
        state, two_rounds(), responder, tools=tools.all, name="leaving", shutdown_grace_s=0.3
    )
    turn = turn_in("H", "question", "11.1")
    stop = asyncio.Event()
    task = asyncio.create_task(leaving.run(stop))
    entry_id = await state.threads.queue.enqueue(turn)
    assert entry_id
    await until_true(lambda: started_second(state, entry_id))
    stop.set()
    await asyncio.wait_for(task, 10)
    record = await state.threads.records.read(entry_id)
    assert record is not None and record.state is TurnState.RUNNING
    assert record.attempts == 0  # handed back, not failed: the attempt does not count
    assert await state.client.get(state.keys.lock(turn.thread_key)) is None

    tools.release.set()
    staying = make_worker(
        state, two_rounds(), responder, tools=tools.all, name="staying", claim_idle_s=30
    )
    async with running(staying):
        await until(lambda: len(responder.delivered) == 1, timeout=15)
    assert responder.texts() == ["answer after first done + second done"]
    assert tools.runs == ["first", "second", "second"]  # the finished tool did not run again


async def test_a_stuck_sync_tool_does_not_hold_the_shutdown(
    make_state: Callable[..., State],
) -> None:
    state = make_state(queue={"lock_ttl_s": 30, "claim_idle_s": 30})
    tools, responder = Tools(), MemoryResponder()
    worker = make_worker(
        state, two_rounds("stuck"), responder, tools=tools.all, shutdown_grace_s=0.2
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    entry_id = await state.threads.queue.enqueue(turn_in("K", "question", "12.1"))
    assert entry_id
    await until(lambda: "stuck" in tools.runs)
    stop.set()
    await asyncio.wait_for(task, 10)
    assert not tools.sync_release.is_set()  # the worker stopped while its tool still ran
    tools.sync_release.set()


async def test_a_live_turn_with_a_long_tool_is_never_taken_over(
    make_state: Callable[..., State],
) -> None:
    replica_a, replica_b = make_state(queue=FAST), make_state(queue=FAST)
    tools, responder = Tools(), MemoryResponder()
    worker_a = make_worker(replica_a, two_rounds(), responder, tools=tools.all, name="a")
    worker_b = make_worker(replica_b, two_rounds(), responder, tools=tools.all, name="b")
    looks: list[float] = []
    claim_stale = replica_b.threads.queue.claim_stale

    async def counted(consumer: str, min_idle_ms: int, count: int = 50) -> Any:
        looks.append(asyncio.get_running_loop().time())
        return await claim_stale(consumer, min_idle_ms, count)

    replica_b.threads.queue.claim_stale = counted  # type: ignore[method-assign]
    async with running(worker_a), running(worker_b):
        entry_id = await replica_a.threads.queue.enqueue(turn_in("W", "question", "13.1"))
        assert entry_id
        await until_true(lambda: started_second(replica_a, entry_id))
        since = asyncio.get_running_loop().time()
        # B looks for abandoned turns again and again, for three times the takeover time.
        await until(lambda: bool(looks) and looks[-1] - since > 3.0, timeout=10)
        assert tools.runs == ["first", "second"]
        tools.release.set()
        await until(lambda: len(responder.delivered) == 1)
    assert tools.runs == ["first", "second"]
    assert responder.texts() == ["answer after first done + second done"]
