"""The agent pane: suggested prompts (and an optional greeting) when a thread starts."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config.schema import SlackConfig
from bot.slack.calls import safe_call


def register(app: AsyncApp, settings: SlackConfig) -> None:
    @app.event("assistant_thread_started")
    async def on_thread_started(event: dict[str, Any], client: AsyncWebClient) -> None:
        thread = event.get("assistant_thread") or {}
        channel, thread_ts = thread.get("channel_id"), thread.get("thread_ts")
        if not channel or not thread_ts:
            return
        if settings.greeting:
            await safe_call(
                client.chat_postMessage,
                channel=channel,
                thread_ts=thread_ts,
                text=settings.greeting,
            )
        if settings.suggested_prompts:
            await safe_call(
                client.assistant_threads_setSuggestedPrompts,
                channel_id=channel,
                thread_ts=thread_ts,
                prompts=[p.model_dump() for p in settings.suggested_prompts],
            )

    @app.event("assistant_thread_context_changed")
    async def on_context_changed() -> None:
        return None  # acknowledged; the bot does not use the viewed channel (yet)
