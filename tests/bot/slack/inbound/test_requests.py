"""POST /slack/events: the signature is checked on the raw body before it is parsed; a signed
body that cannot be read is a 400 with one warning, never a 500 with a traceback."""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import quote

import aiohttp
import pytest

from tests.fakes.slack_harness import SlackHarness, event_envelope, mention, signed_headers

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


async def send(app: SlackHarness, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(app.url + "/slack/events", data=body, headers=headers) as response,
    ):
        return response.status, await response.text()


def signed(body: str, content_type: str) -> tuple[bytes, dict[str, str]]:
    return body.encode(), signed_headers(body, content_type)


def assert_quiet(caplog: pytest.LogCaptureFixture, most_warnings: int = 1) -> None:
    """No traceback anywhere, no error, at most ``most_warnings`` warnings."""
    assert [r for r in caplog.records if r.exc_info] == []
    assert "Traceback" not in caplog.text
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) <= most_warnings


@pytest.mark.parametrize(
    "body",
    [
        '{"type": "event_callback", "event": {',  # cut short
        "{'type': 'event_callback'}",  # not JSON
        "[1, 2, 3]",  # JSON, but not an object
        "null",
        '{"authorizations": "everyone"}',  # an object Bolt cannot read ids from
        '{"type": "event_callback", "event": "app_mention"}',  # Bolt routes on event.type
        '{"type": "block_actions", "actions": []}',  # ... and on the first action's id
        '{"type": "block_actions", "actions": [{"value": "no id"}]}',
    ],
)
async def test_a_signed_malformed_json_body_is_a_400(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture, body: str
) -> None:
    await slack_app.start()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        status, reply = await send(slack_app, *signed(body, JSON))
    assert (status, reply) == (400, "malformed request body")
    assert_quiet(caplog)
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "(400)" in warning.getMessage()
    assert body not in caplog.text  # the body is not logged


@pytest.mark.parametrize(
    "form",
    [
        "payload=" + quote('{"type": "block_actions", "actions": ['),
        "payload=" + quote("not json at all"),
        "payload=" + quote('["a list"]'),
        "payload=" + quote('{"type": "block_actions", "actions": "stop_turn"}'),
        "payload=" + quote('{"type": "view_submission", "view": "v"}'),
    ],
)
async def test_a_signed_form_with_a_broken_payload_is_a_400(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture, form: str
) -> None:
    await slack_app.start()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        status, reply = await send(slack_app, *signed(form, FORM))
    assert (status, reply) == (400, "malformed request body")
    assert_quiet(caplog)


async def test_a_signed_body_that_is_not_utf8_is_refused_quietly(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start()
    headers = signed_headers("ignored", JSON)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        status, _ = await send(slack_app, b'{"text": "\xff\xfe"}', headers)
    assert status == 401  # Slack signs UTF-8 text; these bytes cannot be what it signed
    assert_quiet(caplog, most_warnings=0)


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": JSON},  # no signature at all
        {"Content-Type": JSON, "X-Slack-Request-Timestamp": "1700000000"},
        {
            "Content-Type": JSON,
            "X-Slack-Request-Timestamp": "not-a-number",
            "X-Slack-Signature": "v0=00",
        },
        signed_headers("a different body", JSON),
    ],
)
async def test_an_unsigned_malformed_body_is_a_401(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture, headers: dict[str, str]
) -> None:
    await slack_app.start()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        status, reply = await send(slack_app, b'{"type": "event_callback", "event": {', headers)
    assert (status, reply) == (401, "invalid or missing Slack signature")
    assert_quiet(caplog, most_warnings=0)


async def test_a_signed_well_formed_request_still_reaches_bolt(slack_app: SlackHarness) -> None:
    await slack_app.start()
    body = '{"token": "legacy", "challenge": "c-42", "type": "url_verification"}'
    status, reply = await send(slack_app, *signed(body, JSON))
    assert status == 200 and "c-42" in reply


async def test_a_repeated_signature_header_is_a_401_without_a_turn(
    slack_app: SlackHarness,
) -> None:
    """A valid signature and a second one after it: both are read, so the check fails
    (aiohttp's headers would have shown only the first)."""
    await slack_app.start()
    body = json.dumps(event_envelope(mention("hello", "900.000001"), "Ev0TWICE"))
    headers = signed_headers(body)
    head = [
        "POST /slack/events HTTP/1.1",
        "Host: bot",
        f"Content-Length: {len(body.encode())}",
        *(f"{name}: {value}" for name, value in headers.items()),
        "X-Slack-Signature: v0=" + "0" * 64,
    ]
    reader, writer = await asyncio.open_connection("127.0.0.1", slack_app.port)
    writer.write(("\r\n".join(head) + "\r\n\r\n" + body).encode())
    status_line = await asyncio.wait_for(reader.readline(), 5)
    writer.close()
    assert status_line.startswith(b"HTTP/1.1 401 ")
    assert (await slack_app.state.threads.queue.depth())[0] == 0
