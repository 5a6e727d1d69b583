"""Redis unreachable, seen from Slack: events are refused so Slack delivers them again;
slash commands and button clicks, which Slack never redelivers, get plain words at once.
Both in HTTP mode and in Socket Mode."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from slack_bolt.adapter.socket_mode.async_internals import send_async_response
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from bot.process.slack import SlackSide, build_slack_side
from bot.slack.inbound.socket.pool import answer
from bot.slack.inbound.storage_down import STORAGE_DOWN_TEXT, RefusalLog
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_harness import SlackHarness, button_click, command_fields, mention
from tests.fakes.slack_server import TEAM

STOP_VALUE = json.dumps(
    {"team": TEAM, "channel": "C0CHAN", "thread": "600.000001", "user": "U0ALICE"}
)


async def started_without_redis(app: SlackHarness, redis: PrivateRedis) -> SlackHarness:
    app.redis_url = redis.url
    await app.start(with_worker=False)
    redis.stop()
    return app


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert [r for r in caplog.records if r.exc_info] == []
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_http_a_slash_command_gets_the_sentence(
    slack_app: SlackHarness, private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    app = await started_without_redis(slack_app, private_redis)
    started = time.monotonic()
    reply = await app.command("whoami")  # asserts the 200
    assert time.monotonic() - started < 3  # inside Slack's 3 seconds
    assert reply == {"text": STORAGE_DOWN_TEXT, "response_type": "ephemeral"}
    no_traceback(caplog)


async def test_http_the_stop_button_answers_through_the_response_url(
    slack_app: SlackHarness, private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    app = await started_without_redis(slack_app, private_redis)
    assert await app.click("stop_turn", STOP_VALUE, "U0ALICE", "600.000002") == 200
    [reply] = app.slack.calls_to("response_url")
    assert reply.args["text"] == STORAGE_DOWN_TEXT
    assert reply.args["response_type"] == "ephemeral"
    assert reply.args["replace_original"] is False  # the progress message stays
    no_traceback(caplog)


async def test_http_an_event_is_refused_with_503(
    slack_app: SlackHarness, private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    app = await started_without_redis(slack_app, private_redis)
    status, ack_s = await app.post(app.envelope(mention("hello?", "601.000001"), "EvDOWN"))
    assert status == 503 and ack_s < 3
    [warning] = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert warning.startswith("Redis is unreachable (StateUnavailable: ")
    assert warning.endswith("refused 1 events (Slack sends them again)")
    no_traceback(caplog)


async def test_http_an_admin_command_that_writes_gets_the_sentence(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    slack_app.redis_url = private_redis.url
    await slack_app.start(
        with_worker=False,
        roles={
            "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
            "member": {"default": True, "tools": ["get_time"]},
        },
    )
    assert await slack_app.command("roles", user="U0ADMIN")  # roles now cached in Redis
    private_redis.stop()
    reply = await slack_app.command("disable get_time", user="U0ADMIN")
    assert reply["text"] == STORAGE_DOWN_TEXT


# --- Socket Mode: the same requests answered as the socket pool answers them -------------


async def socket_app(app: SlackHarness, redis: PrivateRedis) -> SlackSide:
    await started_without_redis(app, redis)
    assert app.services is not None
    return build_slack_side(app.services, http=False)


async def dispatch(side: SlackSide, body: dict[str, Any], kind: str) -> tuple[int, str]:
    request = SocketModeRequest(type=kind, envelope_id="env-1", payload=body)
    response = await answer(side.app, side.messages, request)
    return response.status, response.body


async def test_socket_mode_a_slash_command_is_acked_with_the_sentence(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    side = await socket_app(slack_app, private_redis)
    request = SocketModeRequest(
        type="slash_commands", envelope_id="env-1", payload=dict(command_fields("whoami"))
    )
    response = await answer(side.app, side.messages, request)
    assert response.status == 200
    assert json.loads(response.body) == {"text": STORAGE_DOWN_TEXT, "response_type": "ephemeral"}

    # What the socket handler then sends: an ack whose payload is the ephemeral reply.
    sent: list[SocketModeResponse] = []

    class Socket:
        logger = logging.getLogger("test.socket")

        async def send_socket_mode_response(self, response: SocketModeResponse) -> None:
            sent.append(response)

    envelope = SocketModeRequest(type="slash_commands", envelope_id="env-1", payload={})
    await send_async_response(Socket(), envelope, response, time.time())  # type: ignore[arg-type]
    [ack] = sent
    assert ack.envelope_id == "env-1"
    assert ack.payload == {"text": STORAGE_DOWN_TEXT, "response_type": "ephemeral"}


async def test_socket_mode_the_stop_button_is_acked_and_answered(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    side = await socket_app(slack_app, private_redis)
    click = button_click(
        "stop_turn", STOP_VALUE, "U0ALICE", "600.000002", slack_app.slack.response_url
    )
    status, _ = await dispatch(side, click, "interactive")
    assert status == 200
    [reply] = slack_app.slack.calls_to("response_url")
    assert reply.args["text"] == STORAGE_DOWN_TEXT


async def test_socket_mode_an_event_is_not_acked(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    side = await socket_app(slack_app, private_redis)
    await side.identity.load()  # auth.test answered: the event takes the short way past Bolt
    envelope = slack_app.envelope(mention("hello?", "602.000001"))
    status, _ = await dispatch(side, envelope, "events_api")
    assert status == 503  # anything but 200 sends no ack: Slack redelivers
    side.identity.result = None  # before auth.test has answered: through Bolt, the same
    status, _ = await dispatch(side, envelope, "events_api")
    assert status == 503


def test_refusals_are_one_warning_a_minute_with_their_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    refusals = RefusalLog(every_s=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="bot.slack.inbound.storage_down"):
        for _ in range(30):
            refusals.refused("events", "NotReplicated: 0 of 1 replica(s)")
            now[0] += 1.0  # 30 s of refusals
        refusals.refused("slash commands", "NoReplicasError: Not enough good replicas")
        now[0] += 31.0
        refusals.refused("events", "ConnectionError: refused")
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "Redis is unreachable (NotReplicated: 0 of 1 replica(s)): refused 1 events",
        "Redis is unreachable (ConnectionError: refused): refused 30 events, 1 slash commands",
    ]


async def test_a_primary_refusing_writes_for_want_of_replicas_gives_503s_and_one_warning(
    slack_app: SlackHarness, private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    """NOREPLICAS (``min-replicas-to-write`` with its replica gone, as during a failover) is
    Redis being away: every event gets a 503, the log one warning, no traceback."""
    slack_app.redis_url = private_redis.url
    app = await slack_app.start(with_worker=False)
    assert app.services is not None
    await app.services.state.client.config_set("min-replicas-to-write", 1)
    try:
        statuses = [
            (await app.post(app.envelope(mention(f"q{n}", f"602.00000{n}"), f"EvNR{n}")))[0]
            for n in range(1, 6)
        ]
    finally:
        await app.services.state.client.config_set("min-replicas-to-write", 0)
    assert statuses == [503] * 5
    warnings = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    [warning] = warnings
    assert warning.startswith(
        "Redis is unreachable (StateUnavailable: Redis is unreachable: NoReplicasError: "
        "Not enough good replicas to write."
    )
    assert warning.endswith("): refused 1 events (Slack sends them again)")
    ours = [r for r in caplog.records if r.name.startswith(("bot", "slack_bolt"))]
    assert [r for r in ours if r.exc_info or r.levelno >= logging.ERROR] == []
