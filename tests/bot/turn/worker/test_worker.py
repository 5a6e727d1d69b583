"""Workers on the real Redis: order per thread, parallel threads, exactly one answer."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from bot.agent.result import StopReason
from bot.llm.response import ModelResponse, ToolCall
from bot.process.state import State
from bot.state.redis.commands import Commands
from bot.state.redis.errors import StateUnavailable
from bot.turn.model import Turn
from bot.turn.outcome import GAVE_UP, NOT_DELIVERED
from bot.turn.store.history import UNDELIVERED
from bot.turn.store.notices import Notice
from bot.turn.worker.consumer import READ_BATCH
from tests.fakes.function_model import FunctionModel, last_user_text
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.worker_kit import MemoryResponder, make_worker, running
from tests.waiting import until, until_true
from tools import tool

Timeline = list[tuple[str, float, float]]


def turn_in(thread: str, text: str, ts: str) -> Turn:
    return Turn("T1", "C1", thread, "U1", text, message_ts=ts, event_id=f"Ev{ts}")


async def drained(state: State) -> bool:
    """Nothing queued and nothing read and unacknowledged: no turn left for any worker."""
    depth, _ = await state.threads.queue.depth()
    return depth == 0 and await state.threads.queue.pending_count() == 0


CONSUMER_LOG = "bot.turn.worker.consumer"


def backed_off(caplog: pytest.LogCaptureFixture) -> int:
    """How many times a worker met a Redis problem and waited before trying again."""
    return sum(
        record.name == CONSUMER_LOG
        and record.getMessage().startswith("Redis problem in worker")
        and "retrying in" in record.getMessage()
        for record in caplog.records
    )


def slow_echo(timeline: Timeline, seconds: float = 0.3) -> FunctionModel:
    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        text = last_user_text(messages)
        started = time.monotonic()
        await asyncio.sleep(seconds)
        timeline.append((text, started, time.monotonic()))
        earlier = [m["content"] for m in messages if m["role"] == "user"][:-1]
        return ModelResponse(f"answer to {text} (after {','.join(earlier) or 'nothing'})")

    return FunctionModel(respond)


async def test_one_thread_in_order_other_threads_in_parallel(
    make_state: Callable[..., State],
) -> None:
    timeline: Timeline = []
    responder = MemoryResponder()
    replica_a, replica_b = make_state(), make_state()
    workers = [
        make_worker(replica_a, slow_echo(timeline), responder, name="a"),
        make_worker(replica_b, slow_echo(timeline), responder, name="b"),
    ]
    async with running(*workers):
        for n, text in enumerate(["A1", "A2", "A3"]):
            await (replica_a if n % 2 else replica_b).threads.queue.enqueue(
                turn_in("A", text, f"1.{n}")
            )
        await replica_a.threads.queue.enqueue(turn_in("B", "B1", "2.0"))
        await until(lambda: len(responder.delivered) == 4)

    thread_a = [text for turn, text, _ in responder.delivered if turn.thread_ts == "A"]
    assert thread_a == [
        "answer to A1 (after nothing)",
        "answer to A2 (after A1)",
        "answer to A3 (after A1,A2)",
    ]
    spans = {text: (start, end) for text, start, end in timeline}
    # One at a time in thread A, in arrival order...
    assert spans["A1"][1] <= spans["A2"][0] and spans["A2"][1] <= spans["A3"][0]
    # ...while thread B ran at the same time as thread A.
    assert spans["B1"][0] < spans["A1"][1]
    assert len(await replica_a.threads.history.load_turns(turn_in("A", "", "").thread_key)) == 3
    assert await replica_a.threads.queue.pending_count() == 0


async def test_concurrent_duplicate_deliveries_give_one_answer(
    make_state: Callable[..., State],
) -> None:
    timeline: Timeline = []
    responder = MemoryResponder()
    replica_a, replica_b = make_state(), make_state()
    workers = [
        make_worker(replica_a, slow_echo(timeline, 0.05), responder, name="a"),
        make_worker(replica_b, slow_echo(timeline, 0.05), responder, name="b"),
    ]
    async with running(*workers):
        duplicate = turn_in("D", "hello", "3.0")
        entry_ids = await asyncio.gather(
            *[
                (replica_a if n % 2 else replica_b).threads.queue.enqueue(duplicate)
                for n in range(20)
            ]
        )
        # The queue took one and recognised the other 19 as duplicates.
        assert sum(entry_id is not None for entry_id in entry_ids) == 1
        await until(lambda: len(responder.delivered) == 1)
        # That one is finished (acknowledged and deleted) and no worker runs a turn: nothing
        # is left that could be answered again.
        await until_true(lambda: drained(replica_a))
        await until(lambda: not any(worker.active for worker in workers))
    assert responder.texts() == ["answer to hello (after nothing)"]
    assert len(timeline) == 1


async def test_slack_refusing_for_too_long_dead_letters_the_turn(state: State) -> None:
    responder = MemoryResponder()
    responder.fail_next = 10_000  # Slack refuses every delivery
    timeline: Timeline = []
    worker = make_worker(state, slow_echo(timeline, 0), responder, deliver_timeout_s=0.5)
    thread = turn_in("F", "", "").thread_key
    async with running(worker):
        await state.threads.queue.enqueue(turn_in("F", "doomed", "4.0"))
        await until(lambda: len(responder.gave_up) == 1)
        responder.fail_next = 0
        await state.threads.queue.enqueue(turn_in("F", "next", "4.1"))
        await until(lambda: len(responder.delivered) == 1)
    [notice] = responder.gave_up
    assert notice.text == NOT_DELIVERED and notice.message_ts == "4.0"
    # The answer was worked out once; only delivery was retried.
    assert len(timeline) == 2
    [dead] = await state.threads.dead_letters.latest()
    assert Turn.from_json(dead["turn"]).text == "doomed"
    assert dead["reason"] == "Slack refused the answer"
    # The thread went on, and the model was not shown the answer nobody saw as its own.
    assert responder.texts() == ["answer to next (after doomed)"]
    first, _ = await state.threads.history.load_turns(thread)
    assert first[-1]["content"] == UNDELIVERED
    # Both the turn given up and the one delivered are stored with who asked.
    assert [t.user for t in await state.threads.history.stored_turns(thread)] == ["U1", "U1"]
    assert await state.threads.queue.pending_count() == 0
    assert await state.threads.notices.pending() == 0
    [audit] = [e for e in await state.shared.audit.latest(10) if e.kind == "turn"]
    assert (audit.action, audit.outcome) == ("dead_letter", "Slack refused the answer")


async def test_a_turn_that_keeps_failing_is_dead_lettered_after_its_attempts(
    state: State,
) -> None:
    responder = MemoryResponder()
    responder.fail_next = 10_000
    responder.failure = RuntimeError("a bug in delivery")  # not a Slack refusal: a crash
    timeline: Timeline = []
    worker = make_worker(state, slow_echo(timeline, 0), responder, max_attempts=3)
    async with running(worker):
        await state.threads.queue.enqueue(turn_in("G", "doomed", "4.5"))
        await until(lambda: len(responder.gave_up) == 1)
    assert responder.gave_up[0].text == GAVE_UP
    assert len(timeline) == 1  # answered once; the later attempts only tried to deliver
    [dead] = await state.threads.dead_letters.latest()
    assert dead["reason"] == "failed 3 attempts"
    assert await state.threads.queue.pending_count() == 0
    assert await state.threads.queue.head(turn_in("G", "", "").thread_key) is None


async def test_a_stored_answer_is_delivered_without_asking_the_model_again(state: State) -> None:
    responder = MemoryResponder()
    responder.fail_next = 2  # the first deliveries fail, as if Slack hiccuped
    timeline: Timeline = []
    worker = make_worker(state, slow_echo(timeline, 0), responder)
    async with running(worker):
        await state.threads.queue.enqueue(turn_in("S", "once", "5.0"))
        await until(lambda: len(responder.delivered) == 1)
    assert responder.texts() == ["answer to once (after nothing)"]
    assert len(timeline) == 1
    assert len(await state.threads.history.load_turns(turn_in("S", "", "").thread_key)) == 1


async def test_stop_cancels_the_running_turn(state: State) -> None:
    release = asyncio.Event()

    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        await release.wait()
        return ModelResponse("too late")

    responder = MemoryResponder()
    worker = make_worker(state, FunctionModel(respond), responder)
    thread = turn_in("X", "", "").thread_key
    async with running(worker):
        await state.threads.queue.enqueue(turn_in("X", "long question", "6.0"))
        await until(lambda: worker.processor.stops.stop(thread))
        await until(lambda: len(responder.delivered) == 1)
    _, text, outcome = responder.delivered[0]
    assert text == "Stopped before the answer was finished."
    assert outcome is StopReason.CANCELLED
    assert (await state.threads.history.load_turns(thread))[0][0]["content"] == "long question"


async def test_tool_executions_are_audited_and_usage_counted(state: State) -> None:
    @tool
    def lookup(item: str) -> str:
        """Look up an item."""
        return f"{item}: 12"

    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        if messages[-1]["role"] == "tool":
            return ModelResponse("12 in stock")
        return ModelResponse("", [ToolCall("c1", "lookup", '{"item": "flour"}')])

    responder = MemoryResponder()
    worker = make_worker(state, FunctionModel(respond), responder, tools=[lookup])
    async with running(worker):
        await state.threads.queue.enqueue(turn_in("U", "flour?", "7.0"))
        await until(lambda: len(responder.delivered) == 1)
    [entry] = await state.shared.audit.latest(5)
    assert (entry.kind, entry.actor, entry.action, entry.outcome) == ("tool", "U1", "lookup", "ok")
    assert entry.detail["arguments"] == '{"item": "flour"}'
    totals = await state.shared.usage.totals("T1", "U1")
    assert totals.turns == 1 and totals.prompt_tokens == 20 and totals.completion_tokens == 10


async def test_the_embedded_redis_runs_a_whole_turn(
    make_state: Callable[..., State], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    embedded = make_state(None)
    assert embedded.handle.embedded
    assert "kept in memory only" in caplog.text
    responder = MemoryResponder()
    timeline: Timeline = []
    worker = make_worker(embedded, slow_echo(timeline, 0), responder)
    async with running(worker):
        started = time.monotonic()
        await embedded.threads.queue.enqueue(turn_in("E", "hi", "8.0"))
        await embedded.threads.queue.enqueue(turn_in("E", "again", "8.1"))
        await until(lambda: len(responder.delivered) == 2)
        assert time.monotonic() - started < 2
    assert responder.texts()[1] == "answer to again (after hi)"


async def test_redis_restarted_under_a_running_worker(
    make_state: Callable[..., State],
    private_redis: PrivateRedis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=CONSUMER_LOG)
    state = make_state(private_redis.url)
    responder = MemoryResponder()
    timeline: Timeline = []
    worker = make_worker(state, slow_echo(timeline, 0), responder)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        await state.threads.queue.enqueue(turn_in("R", "before", "9.0"))
        await until(lambda: len(responder.delivered) == 1)

        private_redis.stop()
        with pytest.raises(StateUnavailable):
            await state.threads.queue.enqueue(turn_in("R", "during", "9.1"))
        # The worker meets the outage and backs off (its warning says so) instead of ending.
        await until(lambda: backed_off(caplog) > 0 or task.done())
        assert not task.done()

        private_redis.start()  # same port, empty (no persistence)
        await state.threads.queue.enqueue(turn_in("R", "after", "9.2"))
        await until(lambda: len(responder.delivered) == 2, timeout=25)
    finally:
        stop.set()
        await asyncio.wait_for(task, 40)
    assert responder.texts() == [
        "answer to before (after nothing)",
        "answer to after (after nothing)",
    ]


async def test_a_notice_whose_thread_is_busy_is_posted_once_the_thread_is_free(
    state: State,
) -> None:
    """The turn that gave up may still hold its thread when the notice is first taken: the
    notice comes due again at the worker's next look, not after its whole take (30 s)."""
    thread = turn_in("N", "", "").thread_key
    held = await state.threads.locks.try_acquire(thread, "another-worker")
    assert held is not None
    commands = Commands()
    state.threads.notices.add_to(
        commands, Notice("9-0", thread.team, thread.channel, thread.thread, "9.0", "Sorry.")
    )
    async with state.client.pipeline(transaction=True) as pipe:
        for command in commands.items:
            pipe.execute_command(*command)
        await pipe.execute()
    responder = MemoryResponder()
    worker = make_worker(state, slow_echo([], 0.0), responder)
    async with running(worker):

        async def taken() -> bool:
            raw = await state.client.hget(state.keys.notice_data(0), "9-0")
            return raw is not None and json.loads(raw)["taken"] >= 1

        await until_true(taken)  # the worker met the busy thread
        assert responder.gave_up == []
        await held.release()
        await until(lambda: len(responder.gave_up) == 1, timeout=5)
    assert responder.gave_up[0].text == "Sorry."
    assert await state.threads.notices.pending() == 0


async def test_a_burst_is_shared_by_the_workers_reading_the_stream(
    make_state: Callable[..., State],
) -> None:
    """A read takes at most READ_BATCH turns: 40 turns enqueued at once, on workers that
    may each run 40 at a time, are not all taken by the first worker to read."""
    timeline: Timeline = []
    responders = {"a": MemoryResponder(), "b": MemoryResponder()}
    states = {name: make_state() for name in responders}
    workers = [
        make_worker(states[n], slow_echo(timeline, 0.2), responders[n], name=n, concurrency=40)
        for n in responders
    ]
    assert all(worker.read_batch == READ_BATCH < 40 for worker in workers)
    async with running(*workers):
        await until(lambda: all(worker.alive for worker in workers), 10)
        turns = [turn_in(f"burst-{n}", f"q{n}", f"{n}.1") for n in range(40)]
        await asyncio.gather(*(states["a"].threads.queue.enqueue(turn) for turn in turns))
        await until(lambda: sum(len(r.delivered) for r in responders.values()) == 40, 30)
    taken = {name: len(r.delivered) for name, r in responders.items()}
    assert min(taken.values()) >= READ_BATCH, taken  # each read its share
    answered = {turn.text for r in responders.values() for turn, _, _ in r.delivered}
    assert answered == {f"q{n}" for n in range(40)}  # each turn once
