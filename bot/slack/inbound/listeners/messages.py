"""Mentions, direct messages and thread follow-ups: each becomes a queued turn; replies
between other people in the bot's threads are kept as context."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext

from bot.config.schema import SlackConfig
from bot.slack.inbound.classify import Aside, Identity, Ignored, classify
from bot.slack.inbound.ingress import Ingress, log_not_answered


def register(app: AsyncApp, ingress: Ingress, settings: SlackConfig) -> None:
    async def on_message(
        event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        me = Identity(
            team_id=context.team_id or body.get("team_id") or "",
            bot_user_id=context.bot_user_id,
            bot_id=context.bot_id,
        )
        decision = classify(event, body.get("event_id") or "", me, settings)
        if isinstance(decision, Ignored):
            log_not_answered(
                event.get("channel"),
                event.get("ts"),
                body.get("event_id") or "",
                decision.reason,
                quiet=decision.quiet,
            )
            return
        # Both raise StateUnavailable when Redis is down: the error handler answers 503.
        if isinstance(decision, Aside):
            await ingress.listen(decision)
            return
        await ingress.accept(decision)

    app.event("app_mention")(on_message)
    app.event("message")(on_message)
