"""The worker's way into Slack: one view per turn (status, then the turn's one message),
and notices.

A :class:`SlackTurnView` lives exactly as long as its turn's owner holds it (an async
context). It starts from the turn's delivery record, so a resumed turn takes over what an
earlier attempt left in the thread, and everything it creates is recorded through the
owner's fence. Leaving the context stops its background work and makes no Slack call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.events import (
    AgentEvent,
    RoundStarted,
    TextDelta,
    ToolFinished,
    ToolProgress,
    ToolStarted,
)
from bot.config.schema import SlackConfig
from bot.slack.errors import error_code, for_delivery, is_temporary
from bot.slack.identity import BotIdentity
from bot.slack.outbound.answer import AnswerWriter
from bot.slack.outbound.background import Background
from bot.slack.outbound.blocks import answer_blocks, message_text, turn_blocks, turn_text
from bot.slack.outbound.delivery import SlackDelivery
from bot.slack.outbound.ledger import DeliveryLedger
from bot.slack.outbound.status import SessionSupport, TurnStatus
from bot.slack.outbound.tagging import Me, OwnMessage, find_own, tag
from bot.slack.outbound.tasks import ToolTask, settle_task, task_chunk
from bot.turn.model import Turn, TurnKind
from bot.turn.responder import DeliveryRecord, Fence, Settled
from bot.turn.store.notices import Notice
from bot.turn.store.stops import StopRequests

log = logging.getLogger(__name__)

STOPPED_NOTE = "Could not finish this answer."


def stop_value(turn: Turn) -> str:
    """What the Stop button carries: the thread, and who asked."""
    return json.dumps(
        {"team": turn.team, "channel": turn.channel, "thread": turn.thread_ts, "user": turn.user},
        separators=(",", ":"),
    )


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
        self.turn = turn
        self.ledger = ledger
        self.background = Background()
        self.status = TurnStatus(
            client,
            turn,
            settings,
            responder.sessions,
            title_thread=turn.kind is TurnKind.ASSISTANT and turn.new_thread,
        )
        stops = responder.stops

        async def was_stopped(ts: str) -> bool:
            return stops is not None and await stops.stream_stopped(turn.channel, ts)

        async def stop_turn() -> None:
            if stops is not None:
                await stops.request(turn.thread_key, turn.user)

        self.answer = AnswerWriter(
            client,
            turn,
            entry_id,
            ledger,
            responder.me,
            self.status,
            settings,
            was_stopped=was_stopped,
            on_user_stop=stop_turn,
            stop_value=stop_value(turn),
            feedback={"m": responder.model} if settings.feedback else None,
        )
        self._started = False

    async def resume(self) -> None:
        """Take over what an earlier attempt left (best effort; delivery does it for sure)."""
        await self.answer.resume()

    async def observe(self, event: AgentEvent) -> None:
        if isinstance(event, RoundStarted):
            if not self._started:
                self._started = True
                self.background.spawn(self._start())
        elif isinstance(event, TextDelta):
            self.answer.text(event.round, event.text)
        elif isinstance(event, ToolStarted):
            self.answer.tool_started(event)
        elif isinstance(event, ToolProgress):
            self.answer.tool_progress(event)
        elif isinstance(event, ToolFinished):
            self.answer.tool_finished(event)

    async def _start(self) -> None:
        await self.status.start()
        if not self.status.sessions and not self.status.shown:
            self.answer.show_working()

    async def deliver(self, settled: Settled) -> None:
        """The turn's message shows the answer (nothing waits for an edit window); later
        parts follow. Recorded, so a retry continues where this one stopped."""
        try:
            await self.background.settle()  # the status: agent session or not
            if not self._started:  # resumed after the loop: find out about the session again
                self._started = True
                await self.status.start()
            await self.answer.finish(settled)
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


class SlackResponder:
    def __init__(
        self,
        client: AsyncWebClient,
        settings: SlackConfig,
        identity: BotIdentity | None = None,
        *,
        stops: StopRequests | None = None,
        model: str = "",
    ) -> None:
        self.client = client
        self.settings = settings
        self.identity = identity or BotIdentity(client)
        self.stops = stops
        self.model = model
        self.sessions = SessionSupport(settings.agent_sessions)

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
        """Close what the turn left open (a stream, the turn's message or the Stop button's
        message while they still offer a stop, also ones whose ts was never learnt), then
        post the notice once: a notice taken before is looked for first."""
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
                tagged = [m.ts for m in await own() if m.is_for(notice.message_ts, "answer", 0)]
                untagged = [m.ts for m in await own() if m.payload is None]
                first_ts, streaming = (
                    (tagged[0], False)
                    if tagged
                    else (untagged[0], True)
                    if untagged
                    else ("", False)
                )
            if first_ts and not record.stopped_by_user and not record.part_ts(0):
                await self._close_turn_message(notice, record, first_ts, streaming)
            control_ts = record.control_ts
            if record.control_posting and not control_ts:
                control_ts = next(
                    (m.ts for m in await own() if m.is_for(notice.message_ts, "control")), ""
                )
            if control_ts and not record.control_closed:
                await self._quietly(self.client.chat_delete(channel=notice.channel, ts=control_ts))
            if self.settings.agent_sessions:
                await self._quietly(
                    self.client.agents_sessions_setStatus(
                        channel_id=notice.channel, thread_ts=notice.thread_ts, status="active"
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

    async def _close_turn_message(
        self, notice: Notice, record: SlackDelivery, ts: str, streaming: bool
    ) -> None:
        """The turn's message stops offering a stop and says it could not finish."""
        tasks = [ToolTask(**task) for task in record.tasks]
        for task in tasks:
            if task.open:
                settle_task(task, None)
        if streaming:
            await self._quietly(
                self.client.chat_stopStream(
                    channel=notice.channel,
                    ts=ts,
                    chunks=[task_chunk(task) for task in tasks] or None,
                    markdown_text=f"\n\n_{STOPPED_NOTE}_",
                    metadata=tag(notice.message_ts, notice.id, "answer", 0),
                )
            )
            return
        await self._quietly(
            self.client.chat_update(
                channel=notice.channel,
                ts=ts,
                text=turn_text(tasks, STOPPED_NOTE, True),
                blocks=turn_blocks(tasks, f"_{STOPPED_NOTE}_", finished=True),
                metadata=tag(notice.message_ts, notice.id, "answer", 0),
            )
        )

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
