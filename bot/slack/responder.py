"""The worker's way into Slack: one view per turn (progress, then the answer), and notices.

A :class:`SlackTurnView` lives exactly as long as its turn's owner holds it (an async
context). It starts from the turn's delivery record, so a resumed turn takes over what an
earlier attempt left in the thread, and everything it creates is recorded through the
owner's fence. Leaving the context stops its background writers and makes no Slack call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.events import AgentEvent, RoundStarted, TextDelta, ToolFinished, ToolStarted
from bot.config.schema import SlackConfig
from bot.lifecycle.responder import Aborted, DeliveryRecord, Fence, Settled
from bot.slack.answer import AnswerWriter
from bot.slack.blocks import ToolLine, answer_blocks, message_text, progress_blocks
from bot.slack.calls import safe_call
from bot.slack.delivery import SlackDelivery
from bot.slack.errors import error_code, for_delivery, is_temporary
from bot.slack.ledger import DeliveryLedger
from bot.slack.progress import ProgressView
from bot.slack.tagging import Me, find_own, tag
from bot.state.notices import Notice
from bot.turn import Turn

log = logging.getLogger(__name__)

TITLE_CHARS = 60
STOPPED_NOTE = "Could not finish this answer."


class SlackTurnView:
    """Everything shown for one turn; :meth:`observe` is the loop's observer."""

    def __init__(
        self,
        client: AsyncWebClient,
        turn: Turn,
        entry_id: str,
        ledger: DeliveryLedger,
        settings: SlackConfig,
        responder: SlackResponder,
    ) -> None:
        self.client = client
        self.turn = turn
        self.ledger = ledger
        self.responder = responder
        self.progress = ProgressView(
            client,
            turn,
            entry_id,
            ledger,
            responder.me,
            interval_s=settings.edit_interval_s,
            status_text=settings.status_text,
        )
        self.answer = AnswerWriter(
            client,
            turn,
            entry_id,
            ledger,
            responder.me,
            streaming=settings.streaming,
            buffer_chars=settings.stream_buffer_chars,
            interval_s=settings.edit_interval_s,
        )
        self._titled = not (turn.kind == "assistant" and turn.extra.get("new_thread"))

    async def resume(self) -> None:
        """Take over what an earlier attempt left: a progress message it posted but did not
        record, a stream it left open. Best effort; delivery does it for sure."""
        try:
            await self.progress.find_posted()
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            log.info("could not look for the earlier progress message yet (%s)", exc)
        await self.answer.resume()

    async def observe(self, event: AgentEvent) -> None:
        if not self._titled:
            self._titled = True
            title = " ".join(self.turn.text.split())[:TITLE_CHARS]
            await safe_call(
                self.client.assistant_threads_setTitle,
                channel_id=self.turn.channel,
                thread_ts=self.turn.thread_ts,
                title=title,
            )
        if isinstance(event, RoundStarted):
            await self.progress.start()
        elif isinstance(event, TextDelta):
            self.answer.text(event.round, event.text)
        elif isinstance(event, ToolStarted):
            remark = self.answer.tools_called(event.round)
            self.progress.tool_started(event, remark)
        elif isinstance(event, ToolFinished):
            self.progress.tool_finished(event)

    async def deliver(self, settled: Settled) -> None:
        """The answer first (nothing waits for an edit window), then the progress message's
        final form. Both are recorded, so a retry continues where this one stopped."""
        await self.answer.finish(settled.text)
        try:
            await self.progress.finish(settled.tool_results())
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            raise for_delivery(exc) from exc

    def delivery(self) -> DeliveryRecord:
        return self.ledger.record.to_record()

    async def close(self) -> None:
        await self.answer.close()
        await self.progress.close()


class SlackResponder:
    def __init__(self, client: AsyncWebClient, settings: SlackConfig) -> None:
        self.client = client
        self.settings = settings
        self._me: Me | None = None

    async def me(self) -> Me:
        """Who the bot is (auth.test, once per process)."""
        if self._me is None:
            response = await self.client.auth_test()
            self._me = Me(str(response.get("user_id") or ""), str(response.get("bot_id") or ""))
        return self._me

    @contextlib.asynccontextmanager
    async def view(
        self, turn: Turn, entry_id: str, delivery: DeliveryRecord, fence: Fence
    ) -> AsyncIterator[SlackTurnView]:
        ledger = DeliveryLedger(SlackDelivery.from_record(delivery), fence)
        view = SlackTurnView(self.client, turn, entry_id, ledger, self.settings, self)
        try:
            if delivery:
                await view.resume()
            yield view
        finally:
            await view.close()

    async def post_notice(self, notice: Notice) -> None:
        """Close what the turn left open (a stream, a progress message with a Stop button),
        then post the notice once (tagged, and looked for first when retried)."""
        record = SlackDelivery.from_record(notice.delivery)
        try:
            if record.first_ts and record.first_streaming:
                await self._quietly(
                    self.client.chat_stopStream(channel=notice.channel, ts=record.first_ts)
                )
            if record.progress_ts and not record.progress_closed:
                lines = [ToolLine(**line) for line in record.progress_lines]
                await self._quietly(
                    self.client.chat_update(
                        channel=notice.channel,
                        ts=record.progress_ts,
                        text=STOPPED_NOTE,
                        blocks=progress_blocks(lines, STOPPED_NOTE, True),
                    )
                )
            if notice.attempts and await self._notice_posted(notice):
                return
            await self.client.chat_postMessage(
                channel=notice.channel,
                thread_ts=notice.thread_ts,
                text=message_text(notice.text),
                blocks=answer_blocks(notice.text),
                metadata=tag(notice.message_ts, notice.id, "notice"),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise for_delivery(exc) from exc

    async def _notice_posted(self, notice: Notice) -> bool:
        turn = Turn(notice.team, notice.channel, notice.thread_ts, "", "", notice.message_ts)
        found = await find_own(self.client, turn, self.me)
        return any(m.is_for(notice.message_ts, "notice") for m in found)

    @staticmethod
    async def _quietly(call: Awaitable[Any]) -> None:
        """A tidying call: what Slack refuses for good (the message is gone, the stream is
        over) is fine; what it refuses for now is raised."""
        try:
            await call
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_temporary(exc):
                raise
            log.info("tidying up failed for good (%s)", error_code(exc))
