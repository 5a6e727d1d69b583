"""Mentions, direct messages and thread follow-ups as Bolt dispatches them: each goes to the
ingress (queued as a turn, or kept as context). Most arrive by the shortcut past Bolt
(bot/slack/inbound/message_events.py); this listener takes the rest (before auth.test has
answered)."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack.inbound.classify import Identity, shared_channel
from bot.slack.inbound.ingress import Ingress


def register(app: AsyncApp, ingress: Ingress) -> None:
    async def on_message(
        event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        me = Identity(
            team_id=context.team_id or body.get("team_id") or "",
            bot_user_id=context.bot_user_id,
            bot_id=context.bot_id,
        )
        # Raises StateUnavailable when Redis is down: the error handler answers 503.
        await ingress.receive(event, body.get("event_id") or "", me, shared=shared_channel(body))

    app.event("app_mention")(on_message)
    app.event("message")(on_message)
