"""Tokens checked at start: a refused token stops start-up with a ConfigError (exit 2)
naming the variable; Slack not answering, or answering with a passing error, does not."""

from __future__ import annotations

import logging

import pytest

from bot.config.errors import ConfigError
from bot.slack.client import web_client
from bot.slack.identity import BotIdentity
from bot.slack.tokens import verify_tokens
from tests.fakes.slack_server import FakeSlack
from tests.fakes.socket_mode import FakeSocketMode


def identity(fake_slack: FakeSlack) -> BotIdentity:
    return BotIdentity(web_client("xoxb-test", fake_slack.api_url))


async def test_tokens_slack_takes(fake_slack: FakeSlack, fake_socket: FakeSocketMode) -> None:
    me = identity(fake_slack)
    await verify_tokens(me, "xapp-test")
    assert me.result is not None  # auth.test's answer is kept for Bolt
    assert [c.method for c in fake_slack.calls] == ["auth.test", "apps.connections.open"]


async def test_a_refused_bot_token(fake_slack: FakeSlack) -> None:
    fake_slack.fail("auth.test", "invalid_auth")
    refused = r"Slack refused SLACK_BOT_TOKEN \(auth.test: invalid_auth\)"
    with pytest.raises(ConfigError, match=refused):
        await verify_tokens(identity(fake_slack), None)


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked", "not_allowed_token_type"])
async def test_a_refused_app_token(fake_slack: FakeSlack, error: str) -> None:
    fake_slack.fail("apps.connections.open", error)
    with pytest.raises(ConfigError, match=rf"SLACK_APP_TOKEN \(apps.connections.open: {error}\)"):
        await verify_tokens(identity(fake_slack), "xapp-test")


async def test_slack_not_answering_only_warns(
    fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake_slack.latency_s = 30
    await verify_tokens(identity(fake_slack), "xapp-test", timeout_s=0.3)
    assert "Slack did not answer within 0.3 s at start" in caplog.text


async def test_a_passing_error_only_warns(
    fake_slack: FakeSlack, fake_socket: FakeSocketMode, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    fake_slack.fail("apps.connections.open", "internal_error")
    await verify_tokens(identity(fake_slack), "xapp-test")
    assert "apps.connections.open failed at start (internal_error)" in caplog.text
