"""Writes the bot builds on are on a replica first (WAIT), against real processes: a primary
and its replica, and the same behind a Sentinel; a write no replica confirmed, or that landed
on a primary the Sentinels no longer name, is refused."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio

from bot.process.state import State, open_state
from bot.state.redis.errors import REDIS_DOWN, NoReplicasError, NotReplicated, StateUnavailable
from bot.state.redis.replication import Replication, Requirement
from bot.state.redis.script_batch import ScriptBatch
from bot.turn.model import Turn
from tests.conftest import config_with_prefix
from tests.fakes.redis_sentinel import PrivateSentinel

SET = "redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]"


def client(port: int) -> redis.asyncio.Redis:
    return redis.asyncio.Redis(port=port, decode_responses=True, socket_timeout=5)


async def promote(port: int) -> None:
    """The replica at ``port`` stops following its primary (what a failover does first)."""
    async with client(port) as replica:
        await replica.replicaof("NO", "ONE")


def message(n: int) -> Turn:
    return Turn("T1", "C1", "100.1", "U1", f"m{n}", message_ts=f"100.{n}", event_id=f"Ev{n}")


async def test_a_write_is_confirmed_by_the_replica_and_refused_once_none_follows(
    sentinel: PrivateSentinel,
) -> None:
    primary = client(sentinel.primary_port)
    replication = Replication(1, timeout_ms=200)
    script = replication.register(primary, SET)
    try:
        assert await script(keys=["k"], args=["one"]) == "one"
        async with client(sentinel.replica_port) as replica:
            assert await replica.get("k") == "one"  # confirmed: already there
        await promote(sentinel.replica_port)
        with pytest.raises(NotReplicated, match="0 of 1 replica"):
            await script(keys=["k"], args=["two"])
        assert await primary.get("k") == "two"  # written, but nothing may build on it
        # Off (a single Redis): no WAIT, no refusal.
        assert await Replication(0).register(primary, SET)(keys=["k"], args=["3"]) == "3"
    finally:
        await primary.aclose()


async def test_a_burst_of_calls_is_confirmed_and_refused_together(
    sentinel: PrivateSentinel,
) -> None:
    """A burst's enqueues go in one pipeline with one WAIT at its end (script_batch.py)."""
    primary = client(sentinel.primary_port)
    batch = ScriptBatch(primary.register_script(SET), replication=Replication(1, 200))
    try:
        replies = await asyncio.gather(*(batch([f"k{n}"], [str(n)]) for n in range(20)))
        assert replies == [str(n) for n in range(20)]
        await promote(sentinel.replica_port)
        outcomes = await asyncio.gather(
            *(batch([f"k{n}"], ["again"]) for n in range(20)), return_exceptions=True
        )
        assert all(isinstance(o, NotReplicated) for o in outcomes), outcomes
    finally:
        await primary.aclose()


async def test_behind_a_sentinel_an_event_is_queued_once_a_replica_has_it(
    sentinel: PrivateSentinel,
) -> None:
    state = open_state(sentinel.url, config_with_prefix("replication:"))
    try:
        assert state.handle.replication.wanted == 1  # the default behind Sentinels
        need = await state.handle.replication.requirement()
        assert need == Requirement(1, ("127.0.0.1", sentinel.primary_port))
        entry_id = await state.threads.queue.enqueue(message(1))
        assert entry_id
        async with client(sentinel.replica_port) as replica:
            assert await replica.xlen(state.keys.turns(0)) == 1
        # The replica leaves (promoted by hand: the Sentinel has not switched): the event is
        # refused, so Slack sends it again, rather than acknowledged on a write that a
        # failover would lose.
        await promote(sentinel.replica_port)
        with pytest.raises(StateUnavailable):
            await state.threads.queue.enqueue(message(2))
    finally:
        await state.aclose()


async def test_after_a_failover_writes_land_on_the_new_primary_alone(
    sentinel: PrivateSentinel,
) -> None:
    state = open_state(sentinel.url, config_with_prefix("replication:"))
    old = sentinel.primary_port
    try:
        assert await state.threads.queue.enqueue(message(1))
        await asyncio.to_thread(sentinel.failover)
        new = sentinel.primary_port
        # The old primary does not follow the new one yet: no replica to wait for, but the
        # write must land on the primary the Sentinel names (the pool may still hold
        # connections to the old one).
        replication = state.handle.replication
        replication.view._asked_at = -1.0  # type: ignore[attr-defined]  # look again now
        assert await replication.requirement() == Requirement(0, ("127.0.0.1", new))
        assert await state.threads.queue.enqueue(message(2))
        async with client(new) as primary, client(old) as demoted:
            assert await primary.xlen(state.keys.turns(0)) == 2
            assert await demoted.xlen(state.keys.turns(0)) == 1  # never took the second
    finally:
        await state.aclose()


async def test_a_write_on_a_server_the_sentinels_no_longer_name_is_refused(
    sentinel: PrivateSentinel,
) -> None:
    class Elsewhere:
        async def requirement(self, wanted: int) -> Requirement:
            return Requirement(0, ("127.0.0.1", sentinel.replica_port))

    primary = client(sentinel.primary_port)
    try:
        script = Replication(1, 200, Elsewhere()).register(primary, SET)
        with pytest.raises(NotReplicated, match="did not land on the primary"):
            await script(keys=["k"], args=["lost"])
    finally:
        await primary.aclose()


async def test_noreplicas_is_an_outage_not_an_error(sentinel: PrivateSentinel) -> None:
    """``min-replicas-to-write`` refusing a write (the replica gone) reads as Redis being away
    (an event then gets a 503), not as a failure of the bot."""
    state: State = open_state(
        f"redis://127.0.0.1:{sentinel.primary_port}/0", config_with_prefix("norep:")
    )
    async with client(sentinel.primary_port) as primary:
        await primary.config_set("min-replicas-to-write", 1)
    await promote(sentinel.replica_port)
    try:
        with pytest.raises(NoReplicasError) as refused:
            await state.client.set("x", "1")
        assert isinstance(refused.value, REDIS_DOWN)
        with pytest.raises(StateUnavailable):  # also from inside the enqueue script
            await state.threads.queue.enqueue(message(1))
    finally:
        await state.aclose()
