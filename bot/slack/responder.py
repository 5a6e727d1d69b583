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
from bot.slack.background import Background
from bot.slack.blocks import ToolLine, answer_blocks, message_text, progress_blocks
from bot.slack.calls import safe_call
from bot.slack.delivery import SlackDelivery
from bot.slack.errors import error_code, for_delivery, is_temporary
from bot.slack.identity import BotIdentity
from bot.slack.ledger import DeliveryLedger
from bot.slack.progress import ProgressView, settle_line
from bot.slack.tagging import Me, OwnMessage, find_own, tag
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
        self.background = Background()

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
            self.background.spawn(
                safe_call(
                    self.client.assistant_threads_setTitle,
                    channel_id=self.turn.channel,
                    thread_ts=self.turn.thread_ts,
                    title=title,
                )
            )
        if isinstance(event, RoundStarted):
            self.progress.start()
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
        try:
            await self.answer.finish(settled.text)
            await self.progress.finish(settled.tool_results())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            sorted_ = for_delivery(exc)
            if sorted_ is exc:
                raise
            raise sorted_ from exc

    def delivery(self) -> DeliveryRecord:
        return self.ledger.record.to_record()

    async def close(self) -> None:
        await self.background.close()
        await self.answer.close()
        await self.progress.close()


class SlackResponder:
    def __init__(
        self, client: AsyncWebClient, settings: SlackConfig, identity: BotIdentity | None = None
    ) -> None:
        self.client = client
        self.settings = settings
        self.identity = identity or BotIdentity(client)

    async def me(self) -> Me:
        """Who the bot is (auth.test, once per process)."""
        return await self.identity.me()

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
        """Close what the turn left open (a stream, a progress message with a Stop button,
        also ones whose ts was never learnt), then post the notice once: a notice taken
        before is looked for first."""
        record = SlackDelivery.from_record(notice.delivery)
        turn = Turn(notice.team, notice.channel, notice.thread_ts, "", "", notice.message_ts)
        found: list[OwnMessage] | None = None

        async def own() -> list[OwnMessage]:
            nonlocal found
            if found is None:
                found = await find_own(self.client, turn, self.me)
            return found

        try:
            first_ts, streaming = record.first_ts, record.first_streaming
            if record.first_posting and not first_ts:
                untagged = [m.ts for m in await own() if m.payload is None]
                first_ts, streaming = (untagged[0], True) if untagged else ("", False)
            if first_ts and streaming:
                await self._quietly(
                    self.client.chat_stopStream(
                        channel=notice.channel,
                        ts=first_ts,
                        metadata=tag(notice.message_ts, notice.id, "answer", 0),
                    )
                )
            progress_ts = record.progress_ts
            if record.progress_posting and not progress_ts:
                progress_ts = next(
                    (m.ts for m in await own() if m.is_for(notice.message_ts, "progress")), ""
                )
            if progress_ts and not record.progress_closed:
                lines = [ToolLine(**line) for line in record.progress_lines]
                for line in lines:
                    if line.state == "running":
                        settle_line(line, None)
                await self._quietly(
                    self.client.chat_update(
                        channel=notice.channel,
                        ts=progress_ts,
                        text=STOPPED_NOTE,
                        blocks=progress_blocks(lines, STOPPED_NOTE, True),
                    )
                )
            if not notice.text:
                return
            if notice.taken > 1 and any(m.is_for(notice.message_ts, "notice") for m in await own()):
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
            sorted_ = for_delivery(exc)
            if sorted_ is exc:
                raise
            raise sorted_ from exc

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
