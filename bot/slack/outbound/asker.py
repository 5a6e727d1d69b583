"""Asking the person in the Slack thread a question an MCP server asks (elicitation).

The worker running the tool call posts the question in the turn's thread (tagged, so a
resumed turn never takes it for its own answer), opens it in Redis and waits for the
answer, which the person's click stores from whichever replica Slack sent it to
(``bot/slack/listeners/elicitation.py``). No answer in time is a decline; a tool call that
ends first withdraws the question. The message then says how it ended.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.background import Background
from bot.slack.blocks.question import closed_blocks, question_blocks, question_text
from bot.slack.calls import safe_call
from bot.slack.outbound.tagging import tag
from bot.turn.model import Turn
from bot.turn.store.elicitations import Elicitations, OpenQuestion
from tools.questions import Answer, Question, page_host

log = logging.getLogger(__name__)

TIMED_OUT = ":hourglass: No answer in time: declined."
WITHDRAWN = ":black_square_for_stop: The question was withdrawn (the tool stopped)."


class SlackAsker:
    def __init__(self, client: AsyncWebClient, elicitations: Elicitations, turn: Turn) -> None:
        self.client = client
        self.elicitations = elicitations
        self.turn = turn
        self.background = Background()

    async def ask(self, question: Question) -> Answer:
        turn = self.turn
        if question.url is not None and page_host(question.url) is None:
            log.info("a question in %s would open a page that is not https; declined", turn.channel)
            return Answer.declined()  # never shown: only an https page is a link
        opened = await self.elicitations.open(
            OpenQuestion(
                id=uuid.uuid4().hex,
                team=turn.team,
                channel=turn.channel,
                thread=turn.thread_ts,
                user=turn.user,
                text=question_text(question.asker, question.message),
                schema=question.schema,
                url=question.url,
            ),
            question.timeout_s,
        )
        try:
            response = await self.client.chat_postMessage(
                channel=turn.channel,
                thread_ts=turn.thread_ts,
                text=opened.text,
                blocks=question_blocks(
                    opened.id,
                    question.asker,
                    question.message,
                    question.schema,
                    question.url,
                    turn.user,
                    question.timeout_s,
                ),
                metadata=tag(turn.message_ts, "", "question"),
            )
            opened = await self.elicitations.posted(opened, str(response["ts"]))
            answer = await self.elicitations.wait(opened.id, question.timeout_s)
        except asyncio.CancelledError:
            self._finish(opened, WITHDRAWN)
            raise
        except Exception:
            log.warning("could not ask in %s; declining", turn.channel, exc_info=True)
            self._finish(opened, "")
            return Answer.declined()
        if answer is None:
            late = await self._close(opened)  # a click just before it closed still counts
            if late is not None:
                return late
            log.info("a question in %s got no answer in %.0f s", turn.channel, question.timeout_s)
            self._finish(opened, TIMED_OUT, closed=True)
            return Answer.declined()
        self._finish(opened, "")  # the click already rewrote the message
        return answer

    async def _close(self, question: OpenQuestion) -> Answer | None:
        try:
            return await self.elicitations.close(question.id)
        except Exception:
            log.debug("could not close question %s", question.id, exc_info=True)
            return None

    def _finish(self, question: OpenQuestion, outcome: str, closed: bool = False) -> None:
        """Close the question and, with an ``outcome``, say so in its message; in the
        background, so a withdrawn question never holds the tool call up."""

        async def finish() -> None:
            if not closed:
                await self._close(question)
            if outcome and question.message_ts:
                await safe_call(
                    self.client.chat_update,
                    channel=question.channel,
                    ts=question.message_ts,
                    text=f"{question.text} ({outcome})",
                    blocks=closed_blocks(question.text, outcome),
                )

        self.background.spawn(finish())
