"""The harness's own parts: the model script, the config it writes, the persistent private
Redis, the router's Slack-like delivery (against a stub replica), the replicas' logs, and the
Redis topologies (Sentinel, Cluster) the failover scenarios run on."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
import redis.asyncio
from aiohttp import web
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from bot.config.schema import AppConfig
from tests.fakes.fault_tools import slow_step, sync_step
from tests.fakes.llm_server import Reply
from tests.fakes.redis_server import PrivateRedis, free_port
from tests.fakes.slack_server import FakeSlack
from tests.faults.app_config import BASE_CONFIG, merged, supported
from tests.faults.invariants import Run
from tests.faults.proxy import CutProxy
from tests.faults.replicas import Replica
from tests.faults.router import Router
from tests.faults.scenarios import ClusterFactory
from tests.faults.script import Answers, Plan, Question, Step
from tests.faults.topology.redis_cluster import parse_nodes
from tests.faults.topology.sentinel import SentinelTopology
from tests.waiting import until

pytestmark = pytest.mark.faults
NO_RETRY = Retry(NoBackoff(), 0)


# --- the model script ----------------------------------------------------------------------


def plan(question: Question) -> Plan:
    return Plan(steps=(Step(0.3), Step(2.0, "sync_step"))) if question.k == 1 else Plan()


def test_the_script_asks_for_each_step_then_answers_exactly() -> None:
    answers = Answers(plan)
    user = {"role": "user", "content": "<@U0BOT> m1 t7"}
    first = answers({"messages": [{"role": "system", "content": "s"}, user]})
    assert [(name, json.loads(args)) for _, name, args in first.tool_calls] == [
        ("slow_step", {"name": "t7-m1-s1", "seconds": 0.3})
    ]
    call = {"id": "c1", "type": "function", "function": {"name": "slow_step", "arguments": "{}"}}
    done = [{"role": "assistant", "tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1"}]
    second = answers({"messages": [user, *done]})
    assert [(name, json.loads(args)["name"]) for _, name, args in second.tool_calls] == [
        ("sync_step", "t7-m1-s2")
    ]
    third = answers({"messages": [user, *done, *done]})
    assert (third.text, third.tool_calls) == ("answer to m1 t7", [])
    assert [(c.round, c.answered) for c in answers.calls_for(Question("t7", 1))] == [
        (1, False),
        (2, False),
        (3, True),
    ]


def test_the_script_answers_the_last_user_message_and_adds_the_tail() -> None:
    answers = Answers(lambda q: Plan(tail="More words.", chunk_delay_s=0.1, text_piece=3))
    history = [
        {"role": "user", "content": "m1 t2"},
        {"role": "assistant", "content": "answer to m1 t2"},
        {"role": "user", "content": [{"type": "text", "text": "m2 t2"}]},
    ]
    reply = answers({"messages": history})
    assert reply == Reply(text="answer to m2 t2\n\nMore words.", text_piece=3, chunk_delay_s=0.1)


# --- the config ----------------------------------------------------------------------------


def test_promised_keys_a_build_does_not_know_are_dropped_with_a_note() -> None:
    wanted = merged(BASE_CONFIG, {"queue": {"shutdown_grace_s": 2, "deliver_timeout_s": 30}})
    assert wanted["queue"] == {
        "claim_idle_s": 10,
        "lock_ttl_s": 10,
        "shutdown_grace_s": 2,
        "deliver_timeout_s": 30,
    }
    config, notes = supported(wanted)
    AppConfig.model_validate(config)  # what the replicas are given is valid
    for key in ("shutdown_grace_s", "deliver_timeout_s"):
        kept = key in config["queue"]
        noted = any(f"queue.{key}" in note and "ran without it" in note for note in notes)
        assert kept != noted, (key, config, notes)
    assert wanted["queue"]["shutdown_grace_s"] == 2  # the input is left as it was


def test_any_other_config_mistake_stops_the_scenario() -> None:
    with pytest.raises(ValueError, match="shutdown_grace"):
        supported(merged(BASE_CONFIG, {"queue": {"shutdown_grace": 2}}))


# --- the private Redis ------------------------------------------------------------------------


def test_a_persistent_private_redis_keeps_its_data_over_a_graceful_restart() -> None:
    server = PrivateRedis(appendonly=True)
    server.start()
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        client.xadd("stream", {"turn": "1"})
        client.set("key", "value")
        client.close()
        port = server.port
        server.terminate()
        assert not server.running
        server.start()
        assert server.port == port
        client = redis.Redis.from_url(server.url, decode_responses=True)
        assert client.get("key") == "value" and client.xlen("stream") == 1
        client.close()
    finally:
        server.close()


def test_the_default_private_redis_still_forgets_everything() -> None:
    server = PrivateRedis()
    server.start()
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        client.set("key", "value")
        client.close()
        server.stop()
        server.start()
        client = redis.Redis.from_url(server.url, decode_responses=True)
        assert client.get("key") is None
        client.close()
    finally:
        server.close()


# --- the tools ------------------------------------------------------------------------------


async def test_fault_tools_record_each_start_and_finish(
    private_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULT_REDIS_URL", private_redis.url)
    monkeypatch.setenv("FAULT_RUNS_KEY", "runs")
    assert await slow_step.invoke({"name": "a", "seconds": 0.01}) == "step a done"
    assert await sync_step.invoke({"name": "b", "seconds": 0.01}) == "step b done"
    client = redis.Redis.from_url(private_redis.url)
    try:
        runs = [Run.from_json(raw) for raw in client.lrange("runs", 0, -1)]
    finally:
        client.close()
    assert [(r.name, r.event, r.pid) for r in runs] == [
        ("a", "start", os.getpid()),
        ("a", "finish", os.getpid()),
        ("b", "start", os.getpid()),
        ("b", "finish", os.getpid()),
    ]
    assert runs[0].at <= runs[1].at <= runs[2].at <= runs[3].at


async def test_fault_tools_run_unrecorded_while_redis_is_away(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAULT_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.setenv("FAULT_RUNS_KEY", "runs")
    assert await slow_step.invoke({"name": "a", "seconds": 0.01}) == "step a done"
    assert "could not record start of a" in capsys.readouterr().err


# --- the router ------------------------------------------------------------------------------


@dataclass
class StubReplica:
    """Answers /slack/events with the next scripted status (then 200); records what came."""

    statuses: list[int] = field(default_factory=list)
    received: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # event id, headers
    port: int = 0

    async def events(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.received.append((body["event_id"], dict(request.headers)))
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status)


@pytest.fixture
async def stub() -> AsyncIterator[StubReplica]:
    replica = StubReplica()
    app = web.Application()
    app.router.add_post("/slack/events", replica.events)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    replica.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield replica
    await runner.cleanup()


def retries(stub: StubReplica, event_id: str) -> list[tuple[str | None, str | None]]:
    return [
        (h.get("X-Slack-Retry-Num"), h.get("X-Slack-Retry-Reason"))
        for e, h in stub.received
        if e == event_id
    ]


async def test_refused_events_are_retried_like_slack_then_given_up(
    fake_slack: FakeSlack, stub: StubReplica
) -> None:
    router = Router(fake_slack, lambda: [stub.port], retry_delays_s=(0.01, 0.01, 0.01), pairs=False)
    try:
        stub.statuses = [503, 500]
        first = router.write("t1")
        assert await router.delivered(within_s=5)
        assert retries(stub, "Evt1m1") == [
            (None, None),
            ("1", "http_error"),
            ("2", "http_error"),
        ]
        assert router.accepted(first)

        stub.statuses = [503] * 4
        router.write("t1")
        assert await router.delivered(within_s=5)
        assert [n for n, _ in retries(stub, "Evt1m2")] == [None, "1", "2", "3"]
        assert router.given_up == ["Evt1m2"]
        assert len(router.refused_after(0.0)) == 2 + 4
    finally:
        await router.aclose()


async def test_people_messages_are_registered_in_their_thread(
    fake_slack: FakeSlack, stub: StubReplica
) -> None:
    router = Router(fake_slack, lambda: [stub.port])
    try:
        first, second = router.write("t1"), router.write("t1")
        other = router.write("t2")
        assert await router.delivered(within_s=5)
    finally:
        await router.aclose()
    # Each mention comes as an app_mention event and a message event.
    assert sorted(e for e, _ in stub.received) == [
        "Evt1m1",
        "Evt1m1msg",
        "Evt1m2",
        "Evt1m2msg",
        "Evt2m1",
        "Evt2m1msg",
    ]
    assert second.thread_ts == first.ts == first.thread_ts and other.thread_ts == other.ts
    shown = [(m.text, m.thread_ts) for m in fake_slack.conversation("C0FAULTS", first.ts)]
    assert shown == [("<@U0BOT> m1 t1", None), ("<@U0BOT> m2 t1", first.ts)]
    assert float(first.ts) < float(second.ts) < float(other.ts)


async def test_a_held_message_is_refused_then_delivered_as_a_retry(
    fake_slack: FakeSlack, stub: StubReplica
) -> None:
    router = Router(fake_slack, lambda: [stub.port], pairs=False)
    try:
        late = router.write("t1", hold=True)
        assert await router.delivered(within_s=5)
        assert stub.received == [] and not router.accepted(late)
        router.release(late)
        await until(lambda: router.accepted(late), timeout=5)
        assert retries(stub, "Evt1m1") == [("1", "http_error")]
        assert router.refused_after(0.0) == []  # holding back is not a replica's refusal
    finally:
        await router.aclose()


async def test_duplicates_repeat_the_same_event_id(
    fake_slack: FakeSlack, stub: StubReplica
) -> None:
    router = Router(fake_slack, lambda: [stub.port], duplicates=1.0, pairs=False)
    try:
        router.write("t1")
        assert await router.delivered(within_s=5)
    finally:
        await router.aclose()
    assert sorted(retries(stub, "Evt1m1"), key=str) == [("1", "http_timeout"), (None, None)]


async def test_no_replica_up_counts_as_a_failed_connection(fake_slack: FakeSlack) -> None:
    ports: list[int] = []
    router = Router(fake_slack, lambda: ports, retry_delays_s=(0.01,), pairs=False)
    try:
        router.write("t1")
        assert await router.delivered(within_s=5)
    finally:
        await router.aclose()
    assert [a.reason for a in router.attempts] == ["connection_failed"] * 2
    assert router.given_up == ["Evt1m1"]


# --- the proxy that partitions a replica from Redis ------------------------------------------


async def test_the_proxy_passes_drops_silently_then_resets_what_lived_through_the_cut() -> None:
    target = redis.asyncio.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    port = target.connection_pool.connection_kwargs["port"]
    proxy = CutProxy("127.0.0.1", port)
    await proxy.start()
    client = redis.asyncio.Redis(port=proxy.port, socket_timeout=0.5, retry=NO_RETRY)
    try:
        assert await client.ping()  # passes
        proxy.cut()
        with pytest.raises(redis.exceptions.TimeoutError):
            await client.ping()  # no answer, and no reset either: it times out
        assert proxy.dropped_bytes > 0
        # A new connection during the cut is accepted, and hears nothing.
        fresh = redis.asyncio.Redis(port=proxy.port, socket_timeout=0.5, retry=NO_RETRY)
        with pytest.raises(redis.exceptions.TimeoutError):
            await fresh.ping()
        await fresh.aclose()
        before = proxy.dropped_bytes
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"PING\r\n")
        await writer.drain()
        await until(lambda: proxy.dropped_bytes == before + 6, timeout=2)  # its ping is lost
        proxy.heal()
        with pytest.raises(ConnectionResetError):
            await asyncio.wait_for(reader.read(100), 2)  # reset at the heal, not answered
        writer.close()
        assert await client.ping()  # a new connection passes again
    finally:
        await client.aclose()
        await proxy.stop()
        await target.aclose()


# --- the replicas ----------------------------------------------------------------------------


async def test_a_replica_whose_free_port_was_taken_starts_again_on_others(
    clusters: ClusterFactory,
) -> None:
    """free_port() only finds a port free; another process may bind it before the replica
    does (CI saw 'address already in use'). The replica then starts again on new ports."""
    cluster = clusters("port-taken", replicas=1)
    replica = cluster.replicas[0]
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        replica.metrics_port = taken.getsockname()[1]
        async with cluster:
            assert replica.up
            assert replica.metrics_port != taken.getsockname()[1]
            assert "address already in use" in replica.tail()


def test_a_replica_log_s_tracebacks_are_found_by_their_last_line(tmp_path: Path) -> None:
    log = tmp_path / "replica.log"
    log.write_text(
        "2026-01-01 00:00:00,000 INFO bot: started\n"
        "2026-01-01 00:00:01,000 ERROR bot.turn.worker.processor: turn 1-0 failed\n"
        "Traceback (most recent call last):\n"
        '  File "bot/turn/owner.py", line 98, in run\n'
        "    return await self._run()\n"
        "           ^^^^^^^^^^^^^^^^^\n"
        "redis.exceptions.ConnectionError: gone\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "bot/turn/owner.py", line 99, in run\n'
        "redis.exceptions.ResponseError: NOREPLICAS Not enough good replicas to write.\n"
        "2026-01-01 00:00:02,000 INFO bot: a Traceback mentioned in words is none\n"
    )
    assert Replica(1, log).tracebacks() == [
        "redis.exceptions.ConnectionError: gone",
        "redis.exceptions.ResponseError: NOREPLICAS Not enough good replicas to write.",
    ]
    assert Replica(2, tmp_path / "none.log").tracebacks() == []


# --- the Redis topologies ----------------------------------------------------------------------


async def test_refused_deliveries_are_counted_by_status_or_why(
    fake_slack: FakeSlack, stub: StubReplica
) -> None:
    router = Router(fake_slack, lambda: [stub.port], retry_delays_s=(0.01,), pairs=False)
    try:
        stub.statuses = [500, 503]
        router.write("t1")
        router.write("t2", hold=True)  # held back on purpose: not a refusal
        assert await router.delivered(within_s=5)
        router.ports = lambda: [free_port()]  # nobody listens there
        router.write("t3")
        assert await router.delivered(within_s=5)
        assert router.refused_by_status() == {"500": 1, "503": 1, "connection_failed": 2}
    finally:
        await router.aclose()


def test_cluster_nodes_are_read_with_their_roles_and_slots() -> None:
    nodes = parse_nodes(
        "a1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 [5461->-b2]\n"
        "b2 127.0.0.1:30002@40002 master - 0 0 2 connected 5461-10922 12000\n"
        "c3 127.0.0.1:30003@40003 slave a1 0 0 1 connected\n"
        "d4 127.0.0.1:30004@40004 master,fail - 0 0 3 disconnected 10923-11999\n"
    )
    assert [(n.id, n.port, n.primary, n.replica_of) for n in nodes] == [
        ("a1", 30001, True, "-"),
        ("b2", 30002, True, "-"),
        ("c3", 30003, False, "a1"),
        ("d4", 30004, False, "-"),  # failed: no longer a primary to read from
    ]
    assert nodes[0].serves(0) and nodes[0].serves(5460) and not nodes[0].serves(5461)
    assert nodes[1].serves(12000) and not nodes[1].serves(11999)


async def test_three_sentinels_are_followed_through_a_graceful_failover() -> None:
    """The harness's view of a Sentinel setup (tests/faults/topology/sentinel.py): the URL
    names the three Sentinels; after SENTINEL FAILOVER its reads go to the primary they
    name, and the failover's moments are recorded in order."""
    topology = SentinelTopology()
    await asyncio.to_thread(topology.start)
    try:
        setup = topology.setup
        assert setup.url.count(",") == 2 and setup.quorum == 2
        old = setup.primary_port
        await (await topology.primary_for("key")).set("key", "before")
        times = await topology.failover()
        await until(lambda: times.named_all_at is not None, timeout=15)
        promoted, named = times.promoted_at, times.named_all_at
        assert promoted is not None and named is not None and times.named_first_at is not None
        assert times.sent_at <= promoted <= named
        assert (times.old, times.new) == (old, setup.replica_port)
        primary = await topology.primary_for("key")
        assert primary.connection_pool.connection_kwargs["port"] == times.new
        assert await primary.get("key") == "before"
        assert times.done_at is None  # the old primary is demoted some 10 s later
    finally:
        await topology.aclose()
        topology.close()
