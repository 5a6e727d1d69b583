"""A signed slash command or interaction is accepted once: the same bytes sent again while
their signature is valid are refused and run nothing. End to end through signed requests
(the front door, aiohttp, Bolt), the fake Slack and the real Redis; Socket Mode's
redeliveries still answered; Redis away refuses rather than lets a request through
unchecked."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_sdk.socket_mode.request import SocketModeRequest

from bot.process.slack import build_slack_side
from bot.slack.inbound.replays import REPLAYED, checked_once
from bot.slack.inbound.socket.pool import answer
from bot.slack.inbound.storage_down import STORAGE_DOWN_TEXT
from bot.state.signed_requests import MARGIN_S, VALID_S, kept_for
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_harness import (
    SlackHarness,
    button_click,
    command_fields,
    event_envelope,
    signed_headers,
)
from tests.fakes.slack_server import TEAM

ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["get_time"]},
}

FORM = "application/x-www-form-urlencoded"


class Captured:
    """A request as it went over the wire, to be sent again byte for byte."""

    def __init__(self, body: str, content_type: str = FORM) -> None:
        self.body = body
        self.headers = signed_headers(body, content_type)

    async def send(self, app: SlackHarness) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                app.url + "/slack/events", data=self.body, headers=self.headers
            ) as response,
        ):
            return response.status, await response.text()


def command(text: str, user: str) -> Captured:
    return Captured(urlencode(command_fields(text, user)))


def interaction(payload: dict[str, Any]) -> Captured:
    return Captured(urlencode({"payload": json.dumps(payload)}))


async def roles_of(app: SlackHarness, user: str) -> str:
    return str((await app.command("whoami", user=user))["text"])


@pytest.mark.cluster
async def test_a_grant_replayed_after_its_revoke_is_refused(slack_app: SlackHarness) -> None:
    """The report's attack: a captured `/agent grant` sent again after the revoke granted
    admin again. Now the copy gets 401 and changes nothing."""
    app = await slack_app.start(with_worker=False, roles=ROLES)
    app.slack.users = {u: {"id": u} for u in ("U0ADMIN", "U0MALLORY")}
    grant = command("grant <@U0MALLORY> admin", "U0ADMIN")
    status, reply = await grant.send(app)
    assert status == 200 and json.loads(reply)["text"] == "<@U0MALLORY> now holds *admin*."
    assert "• *admin* — granted by <@U0ADMIN>" in await roles_of(app, "U0MALLORY")
    revoked = await app.command("revoke <@U0MALLORY> admin", user="U0ADMIN")
    assert "no longer holds" in revoked["text"], revoked
    status, reply = await grant.send(app)  # the captured bytes, within their five minutes
    assert (status, reply) == (401, REPLAYED)
    roles = await roles_of(app, "U0MALLORY")
    assert "• *member* — default role" in roles and "admin" not in roles.split("Your tools")[0]
    grants = [
        e
        for e in await app.state.shared.audit.latest(50)
        if e.action == "grant" and e.outcome == "ok"
    ]
    assert len(grants) == 1  # the replay wrote nothing either


async def test_a_replayed_click_runs_nothing(slack_app: SlackHarness) -> None:
    app = await slack_app.start(with_worker=False, roles=ROLES)
    click = interaction(
        button_click("approval_approve", "nope", "U0ADMIN", "1.000001", app.slack.response_url)
    )
    status, _ = await click.send(app)
    assert status == 200
    await app.after_acks()
    assert len(app.slack.calls_to("response_url")) == 1  # the listener ran: "no longer open"
    status, reply = await click.send(app)
    assert (status, reply) == (401, REPLAYED)
    await app.after_acks()
    assert len(app.slack.calls_to("response_url")) == 1  # and did not run again


async def test_two_alike_commands_are_two_requests(slack_app: SlackHarness) -> None:
    """Slack gives each request a trigger id of its own: the same command typed twice in a
    second is signed differently and answered twice."""
    app = await slack_app.start(with_worker=False, roles=ROLES)
    first, second = command("whoami", "U0ADMIN"), command("whoami", "U0ADMIN")
    assert (await first.send(app))[0] == 200 and (await second.send(app))[0] == 200


async def test_events_keep_their_own_dedup(slack_app: SlackHarness) -> None:
    """An Events API envelope is not refused as a replay (a message event is deduplicated by
    its queue; any other event is answered again)."""
    app = await slack_app.start(with_worker=False, roles=ROLES)
    home = event_envelope({"type": "app_home_opened", "user": "U0ADMIN", "tab": "home"}, "EvH1")
    again = Captured(json.dumps(home), "application/json")
    assert (await again.send(app))[0] == 200
    assert (await again.send(app))[0] == 200


async def test_a_click_that_cannot_be_checked_is_refused(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    """Redis away: the replay check cannot be made, so the click is refused as every
    request Redis being away refuses (the person told through the response_url), even one
    whose listener would need no Redis (typing a reason)."""
    slack_app.redis_url = private_redis.url
    app = await slack_app.start(with_worker=False, roles=ROLES)
    private_redis.stop()
    payload = button_click("approval_reason", "", "U0ADMIN", "1.000001", app.slack.response_url)
    started = time.monotonic()
    assert await app.click_payload(payload) == 200
    assert time.monotonic() - started < 3
    [told] = app.slack.calls_to("response_url")
    assert told.args["text"] == STORAGE_DOWN_TEXT


async def test_socket_mode_answers_a_redelivered_envelope(slack_app: SlackHarness) -> None:
    """Socket Mode requests carry no signature (the socket is the app token's): an envelope
    Slack sends again, unacked the first time, is answered again."""
    app = await slack_app.start(with_worker=False, roles=ROLES)
    assert app.services is not None
    side = build_slack_side(app.services, http=False)
    try:
        envelope = SocketModeRequest(
            type="slash_commands",
            envelope_id="env-1",
            payload=dict(command_fields("whoami", "U0ADMIN", team=TEAM)),
        )
        for _ in range(2):
            response = await answer(side.app, side.messages, envelope)
            assert response.status == 200
            assert "admin" in json.loads(response.body)["text"]
    finally:
        await side.later.close()
        await side.client.aclose()


def test_only_the_events_api_is_left_to_its_own_dedup() -> None:
    assert not checked_once({"type": "event_callback", "event": {}})
    assert not checked_once({"type": "url_verification", "challenge": "c"})
    bodies: list[Any] = [
        {"command": "/agent", "text": "grant"},
        {"type": "block_actions"},
        {"type": "view_submission"},
        {"type": "shortcut"},
        {"type": "message_action"},
        {"type": "block_suggestion"},
        {"type": "something_new"},
        [],
    ]
    for body in bodies:
        assert checked_once(body), body


def test_a_request_is_remembered_while_its_signature_is_valid() -> None:
    now = 1_000_000.0
    assert kept_for(str(int(now)), now) == VALID_S + MARGIN_S
    assert kept_for(str(int(now) - VALID_S), now) == MARGIN_S  # about to be refused anyway
    assert kept_for(str(int(now) + VALID_S), now) == 2 * VALID_S + MARGIN_S  # dated ahead
    assert kept_for("not a number", now) == 2 * VALID_S + MARGIN_S
