"""At start: does Slack take the bot token (``auth.test``) and the app token
(``apps.connections.open``)? A token Slack refuses for good stops start-up with a
``ConfigError`` (exit 2) naming the variable; Slack not answering within ``timeout_s`` only
warns: the process starts and keeps trying (``/readyz`` says what is missing)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config.errors import ConfigError
from bot.slack.identity import BotIdentity
from bot.slack.inbound.socket.refusals import is_refusal

log = logging.getLogger(__name__)

START_CHECK_S = 10.0


async def verify_tokens(
    identity: BotIdentity, app_token: str | None, *, timeout_s: float = START_CHECK_S
) -> None:
    try:
        async with asyncio.timeout(timeout_s):
            await _ask(
                identity.load(),
                "SLACK_BOT_TOKEN",
                "auth.test",
                "the bot token (xoxb-...) from the app's OAuth & Permissions page",
            )
            if app_token is not None:
                await _ask(
                    _connections_open(identity.client, app_token),
                    "SLACK_APP_TOKEN",
                    "apps.connections.open",
                    "an app-level token (xapp-...) with connections:write, and Socket Mode "
                    "switched on for the app",
                )
    except TimeoutError:
        log.warning(
            "Slack did not answer within %g s at start; starting anyway and trying again",
            timeout_s,
        )


async def _connections_open(client: AsyncWebClient, app_token: str) -> None:
    await client.apps_connections_open(app_token=app_token)


async def _ask(call: Awaitable[Any], variable: str, method: str, expected: str) -> None:
    try:
        await call
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "")
        if is_refusal(error):
            raise ConfigError(
                f"Slack refused {variable} ({method}: {error}); it must be {expected}"
            ) from None
        log.warning("%s failed at start (%s); starting anyway", method, error)
    except Exception as exc:  # Slack unreachable, a dropped connection: not the token
        log.warning("%s failed at start (%s); starting anyway", method, type(exc).__name__)
