"""Slack's agent sessions: the person pressed Slack's own stop button."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext

from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.stops import StopRequests

log = logging.getLogger(__name__)


def register(app: AsyncApp, stops: StopRequests) -> None:
    @app.event("agent_session_stopped")
    async def on_session_stopped(event: dict[str, Any], context: AsyncBoltContext) -> None:
        channel, thread_ts = event.get("channel"), event.get("thread_ts")
        if not channel or not thread_ts:
            log.info("an agent_session_stopped event without a thread; nothing to stop")
            return
        thread = ThreadKey(context.team_id or "", str(channel), str(thread_ts))
        streams = [str(ts) for ts in event.get("streaming_message_ts") or ()]
        # Whichever replica runs the turn sees it within its poll; the streams Slack stopped
        # are never written to again.
        await stops.request(thread, str(event.get("user") or ""), streams)
        log.info("Slack's stop button in %s (streams %s)", thread, streams or "none")
