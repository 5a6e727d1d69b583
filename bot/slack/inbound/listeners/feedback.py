"""Feedback buttons under an answer: each click is kept with its turn, model, tools and
person (bot/state/feedback.py), and audited."""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.slack.blocks.messages import FEEDBACK_ACTION
from bot.state.feedback import Feedback, FeedbackLog

log = logging.getLogger(__name__)


def register(app: AsyncApp, feedback: FeedbackLog) -> None:
    @app.action(FEEDBACK_ACTION)
    async def on_feedback(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        try:
            value = json.loads(body["actions"][0]["value"])
            verdict = str(value["v"])
        except (KeyError, IndexError, ValueError, TypeError):
            log.warning("a feedback click with an unreadable value")
            return
        if verdict not in ("up", "down"):
            log.warning("a feedback click with an unknown verdict %r", verdict)
            return
        message = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get(
            "channel_id", ""
        )
        ts = str(message.get("ts") or (body.get("container") or {}).get("message_ts") or "")
        await feedback.add(
            Feedback(
                verdict=verdict,
                user=str((body.get("user") or {}).get("id") or ""),
                team=str((body.get("team") or {}).get("id") or ""),
                channel=str(channel),
                thread_ts=str(message.get("thread_ts") or ts),
                message_ts=ts,
                turn=str(value.get("t") or ""),
                model=str(value.get("m") or ""),
                tools=[str(name) for name in value.get("k") or ()],
            )
        )
