"""Slack, as `slack-agent check` sees it: the bot token (auth.test), the scopes it was
granted against what manifest.yml asks for, and Socket Mode's apps.connections.open."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.check.findings import Finding, fail, ok, reason, warn
from bot.slack.manifest import MANIFEST, bot_scopes, read_manifest

TIMEOUT_S = 10


async def check_slack(
    api_url: str, bot_token: str, manifest_path: Path = MANIFEST
) -> list[Finding]:
    client = _client(api_url)
    response, problem = await _call(lambda: client.auth_test(token=bot_token), "the bot token")
    if response is None:
        return [fail("slack", f"auth.test: {problem}")]
    who = f"{response.get('user', '?')} ({response.get('user_id', '?')})"
    found = [ok("slack", f"auth.test: the bot token works: {who} in {response.get('team', '?')}")]
    found.append(_scopes(response.headers, manifest_path))
    return found


def _scopes(headers: Any, manifest_path: Path) -> Finding:
    granted_header = headers.get("x-oauth-scopes") if headers is not None else None
    if granted_header is None:
        return warn("slack", "Slack did not say which scopes the token has (no x-oauth-scopes)")
    try:
        asked = bot_scopes(read_manifest(manifest_path))
    except OSError as exc:
        return warn("slack", f"cannot read {manifest_path} to compare scopes ({exc.strerror})")
    granted = {s.strip() for s in str(granted_header).split(",") if s.strip()}
    missing = sorted(asked - granted)
    if missing:
        return fail(
            "slack",
            f"the bot token lacks scopes the manifest asks for: {', '.join(missing)}; add them "
            "(OAuth & Permissions, or update the app from manifest.yml) and reinstall the app",
        )
    return ok("slack", f"the bot token has every scope the manifest asks for ({len(asked)})")


async def check_socket_mode(api_url: str, app_token: str | None) -> list[Finding]:
    if app_token is None:
        return [ok("socket mode", "off (SLACK_APP_TOKEN is not set): Slack's requests use HTTP")]
    client = _client(api_url)
    response, problem = await _call(
        lambda: client.apps_connections_open(app_token=app_token), "the app token"
    )
    if response is None:
        return [fail("socket mode", f"apps.connections.open: {problem}")]
    return [ok("socket mode", "apps.connections.open gave a websocket address: the token works")]


def _client(api_url: str) -> AsyncWebClient:
    return AsyncWebClient(
        base_url=api_url if api_url.endswith("/") else api_url + "/", timeout=TIMEOUT_S
    )


async def _call(
    call: Callable[[], Awaitable[AsyncSlackResponse]], token: str
) -> tuple[AsyncSlackResponse | None, str]:
    """The response, or None and what went wrong in plain words."""
    try:
        return await call(), ""
    except SlackApiError as exc:
        error = exc.response.get("error") if exc.response is not None else None
        return None, f"Slack refused {token}: {error or exc}" + _hint(str(error))
    except (ClientError, TimeoutError, OSError) as exc:
        return None, f"cannot reach Slack: {reason(exc)}"


def _hint(error: str) -> str:
    return {
        "invalid_auth": " (the token is wrong or belongs to another app)",
        "not_authed": " (no token was sent)",
        "token_revoked": " (the token was revoked: reinstall the app)",
        "account_inactive": " (the app was uninstalled or its workspace is gone)",
        "not_allowed_token_type": " (wrong kind of token: bot xoxb- vs app-level xapp-)",
    }.get(error, "")
