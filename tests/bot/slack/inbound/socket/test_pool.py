"""The Socket Mode pool in this process against the fake Socket Mode server: connections
kept open, a refresh that opens the new connection before the old one closes, a reset
connection replaced, a refusal logged once and shown by problem() until it clears."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pydantic
import pytest
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config.schema import AppConfig
from bot.slack.inbound.socket.pool import SocketPool
from tests.fakes.slack_harness import event_envelope, mention
from tests.fakes.slack_server import FakeSlack
from tests.fakes.socket_mode import FakeSocketMode
from tests.waiting import until, until_true


class Mentions:
    def __init__(self, fake_slack: FakeSlack) -> None:
        self.client = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)
        self.app = AsyncApp(
            client=self.client,
            request_verification_enabled=False,
        )
        self.seen: list[str] = []

        @self.app.event("app_mention")
        async def mentioned(event: dict[str, Any]) -> None:
            self.seen.append(str(event["ts"]))


@pytest.fixture
async def mentions(fake_slack: FakeSlack) -> Mentions:
    return Mentions(fake_slack)


@pytest.fixture
async def make_pool(mentions: Mentions) -> AsyncIterator[Any]:
    pools: list[SocketPool] = []

    def make(**options: Any) -> SocketPool:
        options.setdefault("ping_interval_s", 1.0)
        pool = SocketPool(mentions.app, "xapp-test", mentions.client, **options)
        pools.append(pool)
        pool.start()
        return pool

    yield make
    for pool in pools:
        await pool.close()


def event(ts: str) -> dict[str, Any]:
    return event_envelope(mention("hi", ts), f"Ev{ts}")


async def test_keeps_its_connections_open_and_acks(
    fake_socket: FakeSocketMode, make_pool: Any, mentions: Mentions
) -> None:
    pool = make_pool(connections=3)
    await until(lambda: len(fake_socket.open_connections) == 3)
    await until_true(lambda: _ready(pool))
    envelopes = [fake_socket.send_event(event(f"1.00000{i}")) for i in range(6)]
    await until(lambda: all(e.acked_at is not None for e in envelopes))
    assert sorted(mentions.seen) == [f"1.00000{i}" for i in range(6)]
    assert {e.sent_on[0] for e in envelopes} == {1, 2, 3}  # spread over the connections


async def test_a_refresh_opens_the_new_connection_before_closing_the_old(
    fake_socket: FakeSocketMode, make_pool: Any
) -> None:
    fake_socket.close_after_s = 60  # only the client closes it in time
    make_pool(connections=2)
    await until(lambda: len(fake_socket.open_connections) == 2)
    for reason in ("refresh_requested", "warning"):
        old = fake_socket.open_connections[0]
        before = len(fake_socket.connections)
        await fake_socket.refresh(old, reason)
        await until(lambda old=old: not old.open)  # type: ignore[misc]
        assert old.closed_at is not None
        new = fake_socket.connections[before]
        assert new.opened_at < old.closed_at
        assert len(fake_socket.open_connections) == 2


async def test_too_many_websockets_gives_up_a_connection_but_keeps_the_last(
    fake_socket: FakeSocketMode, make_pool: Any
) -> None:
    fake_socket.close_after_s = 60  # only the client closes them
    pool = make_pool(connections=2)
    await until(lambda: len(fake_socket.open_connections) == 2)
    first, second = fake_socket.open_connections
    await fake_socket.refresh(first, "too_many_websockets")
    await until(lambda: not first.open)
    assert fake_socket.open_connections == [second]  # given up, not replaced
    await fake_socket.refresh(second, "too_many_websockets")
    await until(lambda: not second.open)
    await until(lambda: len(fake_socket.open_connections) == 1)  # the last one reopened
    assert second.closed_at is not None
    assert fake_socket.open_connections[0].opened_at > second.closed_at  # closed first
    await until_true(lambda: _ready(pool))


async def test_a_reset_connection_is_replaced(fake_socket: FakeSocketMode, make_pool: Any) -> None:
    make_pool(connections=2)
    await until(lambda: len(fake_socket.open_connections) == 2)
    fake_socket.reset(fake_socket.open_connections[0])
    await until(
        lambda: len(fake_socket.connections) == 3 and len(fake_socket.open_connections) == 2
    )


async def test_a_silent_connection_is_replaced(fake_socket: FakeSocketMode, make_pool: Any) -> None:
    """No pong for the client's pings: aiohttp's heartbeat (the ping interval) closes it."""
    make_pool(connections=2, ping_interval_s=1.0)
    await until(lambda: len(fake_socket.open_connections) == 2)
    quiet = fake_socket.open_connections[0]
    fake_socket.silence(quiet)
    await until(lambda: not quiet.open, 10)
    await until(lambda: len([c for c in fake_socket.open_connections if not c.silent]) == 2, 10)


async def test_a_refusal_is_logged_once_fails_readiness_and_clears(
    fake_socket: FakeSocketMode,
    fake_slack: FakeSlack,
    make_pool: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.slack.inbound.socket")
    pool = make_pool(connections=2, retry_refused_s=0.1)
    await until(lambda: len(fake_socket.open_connections) == 2)
    fake_slack.fail("apps.connections.open", "invalid_auth", times=10**6)
    calls = len(fake_slack.calls_to("apps.connections.open"))
    for connection in fake_socket.open_connections:
        await fake_socket.refresh(connection, "link_disabled")
    await until_true(lambda: _problem_is(pool, "Slack refuses the Socket Mode connection"))
    # It keeps trying, quietly: ten refused attempts, one error line.
    await until(lambda: len(fake_slack.calls_to("apps.connections.open")) >= calls + 10)
    refusals = [r for r in caplog.records if "refuses the Socket Mode" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].levelno == logging.ERROR
    fake_slack.failures.pop("apps.connections.open")
    await until_true(lambda: _ready(pool))
    assert any("takes the Socket Mode connection again" in r.getMessage() for r in caplog.records)


async def test_a_token_revoked_while_running_shows_once_a_connection_drops(
    fake_socket: FakeSocketMode,
    fake_slack: FakeSlack,
    make_pool: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.slack.inbound.socket")
    pool = make_pool(connections=1, retry_refused_s=0.1)
    await until(lambda: len(fake_socket.open_connections) == 1)
    fake_slack.fail("apps.connections.open", "token_revoked", times=10**6)
    await fake_socket.drop(fake_socket.open_connections[0])
    await until_true(lambda: _problem_is(pool, "Slack refuses the Socket Mode connection"))
    assert await pool.problem() == "Slack refuses the Socket Mode connection (token_revoked)"
    calls = len(fake_slack.calls_to("apps.connections.open"))
    await until(lambda: len(fake_slack.calls_to("apps.connections.open")) >= calls + 5)
    refusals = [r for r in caplog.records if "refuses the Socket Mode" in r.getMessage()]
    assert len(refusals) == 1


async def _ready(pool: SocketPool) -> bool:
    return await pool.problem() is None


async def _problem_is(pool: SocketPool, start: str) -> bool:
    problem = await pool.problem()
    return problem is not None and problem.startswith(start)


@pytest.mark.parametrize(("count", "valid"), [(0, False), (1, True), (10, True), (11, False)])
def test_socket_connections_between_one_and_ten(count: int, valid: bool) -> None:
    if valid:
        assert AppConfig.model_validate({"slack": {"socket_connections": count}})
    else:
        with pytest.raises(pydantic.ValidationError, match="socket_connections"):
            AppConfig.model_validate({"slack": {"socket_connections": count}})
    assert AppConfig().slack.socket_connections == 2
