"""The App Home tab: how to reach the bot, and the tools the person may use."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks import home_view
from bot.slack.coalesced import safe_call
from bot.slack.listeners.commands import ToolList


def register(app: AsyncApp, command: str, tools_for: ToolList) -> None:
    @app.event("app_home_opened")
    async def on_home_opened(event: dict[str, Any], client: AsyncWebClient) -> None:
        if event.get("tab") not in (None, "home"):
            return
        user = event.get("user") or ""
        await safe_call(
            client.views_publish, user_id=user, view=home_view(await tools_for(user), command)
        )
