"""The agent pane: a thread starts (the greeting and suggested prompts, once per thread,
after the ack) and the person looks at another channel (kept as context for the model)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.config.schema import SlackConfig
from bot.slack.blocks.messages import answer_blocks, message_text
from bot.slack.calls import safe_call
from bot.slack.inbound.after_ack import AfterAck
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.agent_pane import AgentPaneThreads

log = logging.getLogger(__name__)


def register(app: AsyncApp, settings: SlackConfig, pane: AgentPaneThreads, later: AfterAck) -> None:
    @app.event("assistant_thread_started")
    async def on_thread_started(
        event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
    ) -> None:
        thread = _thread(event, context)
        if thread is None:
            return
        await _keep_context(pane, thread, event)
        if not await pane.first_start(thread):
            log.info("agent-pane thread %s started again (a redelivery): greeted already", thread)
            return
        later.spawn(_greet(client, settings, pane, thread), respond=None, what="a greeting")

    @app.event("assistant_thread_context_changed")
    async def on_context_changed(event: dict[str, Any], context: AsyncBoltContext) -> None:
        thread = _thread(event, context)
        if thread is not None:
            await _keep_context(pane, thread, event)


def _thread(event: dict[str, Any], context: AsyncBoltContext) -> ThreadKey | None:
    started = event.get("assistant_thread") or {}
    channel, thread_ts = started.get("channel_id"), started.get("thread_ts")
    if not channel or not thread_ts:
        return None
    return ThreadKey(context.team_id or "", str(channel), str(thread_ts))


async def _keep_context(pane: AgentPaneThreads, thread: ThreadKey, event: dict[str, Any]) -> None:
    viewed = (event.get("assistant_thread") or {}).get("context") or {}
    if viewed.get("channel_id"):
        await pane.set_context(thread, viewed)


async def _greet(
    client: AsyncWebClient, settings: SlackConfig, pane: AgentPaneThreads, thread: ThreadKey
) -> None:
    if settings.greeting:
        posted = await safe_call(
            client.chat_postMessage,
            channel=thread.channel,
            thread_ts=thread.thread,
            text=message_text(settings.greeting),
            blocks=answer_blocks(settings.greeting),
        )
        if posted is None:
            await pane.forget_start(thread)  # a redelivered start may try again
            return
    if settings.suggested_prompts:
        await safe_call(
            client.assistant_threads_setSuggestedPrompts,
            channel_id=thread.channel,
            thread_ts=thread.thread,
            prompts=[p.model_dump() for p in settings.suggested_prompts],
        )
