"""``redis+sentinel://`` URLs against real processes: a primary, a replica and a Sentinel
(tests/fakes/redis_sentinel.py), and a failover under a State that is not rebuilt."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import redis.asyncio
import redis.exceptions

from bot.process.state import State
from bot.turn.model import QueuedTurn, Turn
from tests.bot.check.test_check_command import check, config, environment, lines
from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_sentinel import PrivateSentinel
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_server import FakeSlack


def message(text: str, ts: str) -> Turn:
    return Turn("T1", "C1", "100.1", "U1", text, message_ts=ts, event_id=f"Ev{ts}")


async def stream_ids(port: int, stream: str) -> list[str]:
    """The entry ids of ``stream`` on the server at ``port``, asked directly."""
    async with redis.asyncio.Redis(port=port, decode_responses=True) as client:
        entries = await client.xrange(stream)
    return [str(entry_id) for entry_id, _ in entries or ()]


async def test_a_state_on_a_sentinel_url_reads_and_writes_the_primary(
    sentinel: PrivateSentinel, make_state: Callable[..., State]
) -> None:
    state = make_state(sentinel.url)
    await state.threads.queue.ensure_group()
    entry_id = await state.threads.queue.enqueue(message("hello", "100.1"))
    assert entry_id
    [entry] = await state.threads.queue.read("w1", 10, 0)
    assert isinstance(entry, QueuedTurn)
    read_id, turn = entry.entry_id, entry.turn
    assert read_id == entry_id and turn is not None and turn.text == "hello"
    stream = state.keys.turns(0)
    assert await stream_ids(sentinel.primary_port, stream) == [entry_id]


async def test_a_state_follows_a_failover_without_being_rebuilt(
    sentinel: PrivateSentinel, make_state: Callable[..., State]
) -> None:
    state = make_state(sentinel.url)
    stream = state.keys.turns(0)
    await state.threads.queue.ensure_group()
    before = await state.threads.queue.enqueue(message("before", "100.1"))
    assert before
    [entry] = await state.threads.queue.read("w1", 10, 0)
    assert isinstance(entry, QueuedTurn)
    read_id = entry.entry_id
    assert read_id == before
    old_primary = sentinel.primary_port

    await asyncio.to_thread(sentinel.failover)
    # The Sentinel turns the old primary into a replica some 10 s later, and it drops its
    # clients then: the pool already moved to the new primary (bot/state/redis/sentinel.py).
    await asyncio.to_thread(sentinel.wait_demoted)
    assert sentinel.primary_port != old_primary

    after = await state.threads.queue.enqueue(message("after", "100.2"))
    assert after and after > before
    assert await stream_ids(sentinel.primary_port, stream) == [before, after]
    # The consumer group came over with the data: w1 already has the first entry.
    [entry] = await state.threads.queue.read("w1", 10, 0)
    assert isinstance(entry, QueuedTurn)
    read_id, turn = entry.entry_id, entry.turn
    assert read_id == after and turn is not None and turn.text == "after"
    fetched = await state.threads.queue.fetch(before)
    assert isinstance(fetched, QueuedTurn) and fetched.turn.text == "before"


async def test_a_write_right_after_a_failover_lands_on_the_new_primary(
    sentinel: PrivateSentinel, make_state: Callable[..., State]
) -> None:
    state = make_state(sentinel.url)
    stream = state.keys.turns(0)
    before = await state.threads.queue.enqueue(message("before", "100.1"))
    assert before

    await asyncio.to_thread(sentinel.failover)
    after = await state.threads.queue.enqueue(message("after", "100.2"))
    assert after
    assert await stream_ids(sentinel.primary_port, stream) == [before, after]


async def test_a_read_in_flight_when_the_old_primary_is_demoted_is_retried_on_the_new_one(
    sentinel: PrivateSentinel, make_state: Callable[..., State]
) -> None:
    state = make_state(sentinel.url)
    await state.threads.queue.ensure_group()

    await asyncio.to_thread(sentinel.failover)
    # A worker's blocking read, on a pooled connection to the old primary; the Sentinel
    # demotes that server some 10 s after the failover and drops its clients.
    reading = asyncio.create_task(state.threads.queue.read("w1", 10, 14_000))
    await asyncio.to_thread(sentinel.wait_demoted)
    after = await state.threads.queue.enqueue(message("after", "100.2"))
    assert after
    [entry] = await reading
    assert isinstance(entry, QueuedTurn)
    read_id = entry.entry_id
    assert read_id == after


async def test_check_reaches_the_primary_the_sentinels_name(
    sentinel: PrivateSentinel,
    fake_llm: FakeLLM,
    fake_slack: FakeSlack,
    tmp_path: Path,
) -> None:
    env = environment(fake_llm, fake_slack, sentinel.url)
    _, checks, _ = await check("--config", str(config(tmp_path)), env=env)
    [reached] = [line for line in lines(checks, "ok") if line.startswith("redis: reachable")]
    assert f"service {sentinel.url.rsplit('/', 2)[1]} of Sentinels 127.0.0.1:" in reached


async def test_check_says_one_replica_is_not_enough_behind_sentinels(
    sentinel: PrivateSentinel,
    fake_llm: FakeLLM,
    fake_slack: FakeSlack,
    tmp_path: Path,
) -> None:
    env = environment(fake_llm, fake_slack, sentinel.url)
    _, checks, _ = await check("--config", str(config(tmp_path)), env=env)
    [replicas] = [line for line in lines(checks, "warn") if "replica" in line]
    assert replicas.startswith("redis: writes are confirmed by the one replica (WAIT); give")


async def test_check_warns_when_writes_would_wait_for_replicas_that_are_not_there(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    server = PrivateRedis()
    server.start()
    try:
        env = environment(fake_llm, fake_slack, server.url)
        strict = config(tmp_path, "llm: {model: fake-model}\nredis: {replica_acks: 1}\n")
        _, checks, _ = await check("--config", str(strict), env=env)
        [replicas] = [line for line in lines(checks, "warn") if "replica" in line]
        assert replicas == (
            "redis: redis.replica_acks is 1 but 0 replica(s) follow the primary: every "
            "write is refused until they follow (events get 503s)"
        )
    finally:
        server.close()
