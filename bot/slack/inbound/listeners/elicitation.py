"""Answers to the questions MCP servers ask in a thread (bot/slack/outbound/asker.py):
Submit, Accept and Decline. Only the person the question is for may answer; a form that
does not fit is refused with what to fix. The answer is stored in Redis for the worker that
asked, on whichever replica that is, and the message then says it was answered."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.question import (
    ACCEPT_ACTION,
    ACTIONS,
    DECLINE_ACTION,
    closed_blocks,
    submitted_values,
)
from bot.slack.calls import safe_call
from bot.turn.store.elicitations import Elicitations
from tools.form_fields import answer_problems, form_fields
from tools.questions import Answer

log = logging.getLogger(__name__)

CLOSED = "This question is no longer open."
TAKEN = "This question was answered already."


def register(app: AsyncApp, elicitations: Elicitations) -> None:
    @app.action(re.compile("^(" + "|".join(ACTIONS) + ")$"))
    async def on_answer(
        ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient
    ) -> None:
        await ack()
        try:
            action = body["actions"][0]
            question_id, action_id = str(action["value"]), str(action["action_id"])
        except (KeyError, IndexError, TypeError):
            log.warning("an answer button with an unreadable value")
            return
        question = await elicitations.get(question_id)
        if question is None:
            await _tell(respond, CLOSED)
            return
        clicker = (body.get("user") or {}).get("id") or ""
        if clicker != question.user:
            await _tell(respond, f"Only <@{question.user}> can answer this question.")
            return
        if action_id == DECLINE_ACTION:
            answer, outcome = Answer("decline"), f":no_entry_sign: Declined by <@{clicker}>."
        elif action_id == ACCEPT_ACTION or question.url or not form_fields(question.schema):
            answer = Answer("accept", None if question.url else {})
            outcome = f":white_check_mark: Accepted by <@{clicker}>."
        else:
            content = submitted_values(question.schema, body.get("state") or {})
            problems = answer_problems(question.schema, content)
            if problems:
                await _tell(respond, "Please fix this and submit again: " + "; ".join(problems))
                return
            answer = Answer("accept", content)
            outcome = f":white_check_mark: Answered by <@{clicker}>."
        if not await elicitations.answer(question, answer):
            await _tell(respond, TAKEN)
            return
        await safe_call(
            client.chat_update,
            channel=question.channel,
            ts=question.message_ts or (body.get("container") or {}).get("message_ts"),
            text=f"{question.text} ({outcome})",
            blocks=closed_blocks(question.text, outcome),
        )


async def _tell(respond: AsyncRespond, text: str) -> None:
    try:
        await respond(text=text, response_type="ephemeral", replace_original=False)
    except Exception as exc:
        log.info("could not tell the person who clicked (%s)", type(exc).__name__)
