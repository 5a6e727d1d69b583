"""Logs: one JSON object per line with the turn's fields, message text and tool arguments
only at DEBUG, and no configured secret on any line at any level."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError

from bot.cli import main
from bot.observability import logs
from bot.observability.context import ROUND, TurnContext, tool_context, turn_context
from bot.observability.redaction import Redactor
from tests.fakes.llm_server import calls, text
from tests.fakes.mcp_servers import HttpMcpServer
from tests.fakes.slack_harness import SlackHarness, mention

TOOLS = {"modules": ["tests.bot.observability.logging_tools"]}


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Everything logged at DEBUG, through the handler `slack-agent` installs with
    LOG_FORMAT=json (context fields, JSON, secrets redacted)."""
    stream = io.StringIO()
    handler = logs.handler("json", stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_carries_the_fields_that_apply_where_it_was_logged() -> None:
    stream = io.StringIO()
    log = logging.getLogger("tests.fields")
    log.addHandler(logs.handler("json", stream))
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        log.info("outside any turn")
        with turn_context(TurnContext("1-0", "T1", "C1", "171.0001", "U1")):
            token = ROUND.set(2)
            with tool_context("calculate"):
                log.warning("in a tool: %d", 42)
            ROUND.reset(token)
            try:
                raise ValueError("boom")
            except ValueError:
                log.exception("in the turn")
    finally:
        log.handlers.clear()
        log.propagate = True
    outside, in_tool, in_turn = lines(stream)
    assert set(outside) == {"time", "level", "logger", "message"}
    assert in_tool["message"] == "in a tool: 42" and in_tool["level"] == "WARNING"
    expected = {"turn": "1-0", "team": "T1", "channel": "C1", "thread": "171.0001", "user": "U1"}
    assert {k: in_tool[k] for k in expected} == expected
    assert (in_tool["round"], in_tool["tool"]) == (2, "calculate")
    assert "round" not in in_turn and "tool" not in in_turn
    assert in_turn["turn"] == "1-0" and "ValueError: boom" in in_turn["exception"]


def test_log_format_must_be_text_or_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOG_FORMAT", "yaml")
    assert main(["tools"]) == 2
    assert "LOG_FORMAT must be text or json" in capsys.readouterr().err


def test_the_redactor_replaces_every_secret_whole() -> None:
    redactor = Redactor()
    redactor.add(["xoxb-1-abcdef", "xoxb-1-abcdefgh", "short", None])
    assert redactor.redact("a xoxb-1-abcdefgh b xoxb-1-abcdef c short") == (
        "a [redacted] b [redacted] c short"
    )


async def test_a_turn_logs_json_lines_with_its_fields_and_text_only_at_debug(
    slack_app: SlackHarness, captured: io.StringIO
) -> None:
    await slack_app.start(tools=TOOLS)
    slack_app.llm.add(
        calls(("look_up", {"item": "saffron-threads"}, "c1")), text("Three are left.")
    )
    await slack_app.post(slack_app.envelope(mention("how much saffron-in-stock", "130.000001")))
    await slack_app.answered("C0CHAN", "130.000001")

    everything = lines(captured)
    [in_tool] = [line for line in everything if line["message"] == "looking something up"]
    assert in_tool["level"] == "INFO"
    assert {k: in_tool[k] for k in ("team", "channel", "thread", "user", "round", "tool")} == {
        "team": "T0TEAM",
        "channel": "C0CHAN",
        "thread": "130.000001",
        "user": "U0ALICE",
        "round": 1,
        "tool": "look_up",
    }
    assert in_tool["turn"]  # the stream entry id
    # The person's text and the tool's arguments: only on DEBUG lines.
    for needle in ("saffron-in-stock", "saffron-threads"):
        levels = {line["level"] for line in everything if needle in json.dumps(line)}
        assert levels == {"DEBUG"}, needle


SECRETS = {
    "SLACK_BOT_TOKEN": "xoxb-999-secret-bot-token-zq1",
    "SLACK_APP_TOKEN": "xapp-1-secret-app-token-zq2",
    "OPENAI_API_KEY": "sk-secret-openai-key-zq3",
    "MCP_HEADER_TOKEN": "secret-mcp-header-token-zq4",
    "MCP_ENV_TOKEN": "secret-mcp-env-token-zq5",
}


async def test_no_configured_secret_reaches_the_log_at_any_level(
    slack_app: SlackHarness, http_mcp_server: HttpMcpServer, captured: io.StringIO
) -> None:
    await slack_app.start(
        environment=SECRETS,
        tools=TOOLS,
        mcp={
            "servers": {
                "warehouse": {
                    "command": sys.executable,
                    "args": ["-m", "tests.fakes.mcp_server", "stdio"],
                    "env": {"WAREHOUSE_TOKEN": "${MCP_ENV_TOKEN}"},
                    "prefix": "wh_",
                    "approval": "never",
                },
                "remote": {
                    "url": http_mcp_server.url,
                    "headers": {"Authorization": "Bearer ${MCP_HEADER_TOKEN}"},
                    "prefix": "rm_",
                    "approval": "never",
                },
            }
        },
    )
    slack_app.llm.add(
        calls(
            ("wh_lookup_stock", {"item": "flour"}, "c1"),
            ("rm_lookup_stock", {"item": "sugar"}, "c2"),
            ("look_up", {"item": "salt"}, "c3"),
        ),
        text("All found."),
    )
    await slack_app.post(slack_app.envelope(mention("stock?", "131.000001")))
    [answer] = await slack_app.answered("C0CHAN", "131.000001")
    assert answer.tasks["c1"]["status"] == "complete"
    assert answer.tasks["c2"]["status"] == "complete"
    # A failure that quotes a request (the token is in the Authorization header) is logged
    # too: Slack refusing a call.
    slack_app.slack.fail("chat.postMessage", "invalid_auth")
    assert slack_app.process is not None
    with pytest.raises(SlackApiError):
        await slack_app.process.slack.client.api_call(
            "chat.postMessage", json={"channel": "C0CHAN"}
        )

    log = captured.getvalue()
    assert len(log.splitlines()) > 50  # the whole run, at DEBUG, went through the handler
    secrets = [*SECRETS.values(), "test-signing-secret"]
    assert [secret for secret in secrets if secret in log] == []
