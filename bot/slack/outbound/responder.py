"""The worker's way into Slack (the turn owner's Responder): one view per turn
(``view.py``), and the notices owed to people, which first close what a given-up turn left
open."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.config.schema import SlackConfig
from bot.slack.audience import read_by_requester_alone
from bot.slack.blocks.messages import answer_blocks, message_text, turn_blocks, turn_text
from bot.slack.blocks.tasks import ToolTask, settle_task, task_chunk
from bot.slack.client import TurnClient
from bot.slack.errors import error_code, is_temporary, sorted_for_delivery
from bot.slack.identity import BotIdentity, Me
from bot.slack.outbound.delivery import ControlState, MessageState, SlackDelivery
from bot.slack.outbound.ledger import DeliveryLedger
from bot.slack.outbound.sign_in import LinkOpener
from bot.slack.outbound.status import SessionSupport
from bot.slack.outbound.tagging import OwnMessage, find_own, first_message, tag
from bot.slack.outbound.thread import TurnThread, stopped_streams
from bot.slack.outbound.view import SlackTurnView
from bot.turn.model import QueuedTurn, Turn
from bot.turn.ports import Deadline, DeliveryRecord, Fence
from bot.turn.store.approvals import Approvals
from bot.turn.store.lease import Aborted
from bot.turn.store.notices import Notice
from bot.turn.store.stops import StopRequests
from permissions.approval import ApprovalConfig, Deciders, deciders

log = logging.getLogger(__name__)

STOPPED_NOTE = "Could not finish this answer."


class SlackResponder:
    def __init__(
        self,
        client: AsyncWebClient,
        settings: SlackConfig,
        identity: BotIdentity | None = None,
        *,
        stops: StopRequests | None = None,
        model: str = "",
        approvals: Approvals | None = None,
        decide: Deciders | None = None,
        open_link: LinkOpener | None = None,
    ) -> None:
        """``decide``: who may decide an approval request (the approval cards say so; by
        default the requester and admins); ``open_link``: unseals a sign-in request's
        start link, to send it to its person (None: no server signs people in)."""
        self.client = client
        self.settings = settings
        self.identity = identity or BotIdentity(client)
        self.stops = stops
        self.model = model
        self.sessions = SessionSupport(settings.agent_sessions)
        self.approvals = approvals
        self.decide = decide or deciders(ApprovalConfig(), {})
        self.open_link = open_link

    async def me(self) -> Me:
        """Who the bot is (auth.test, once per process)."""
        return await self.identity.me()

    @contextlib.asynccontextmanager
    async def view(
        self, queued: QueuedTurn, delivery: DeliveryRecord, fence: Fence
    ) -> AsyncIterator[SlackTurnView]:
        thread = TurnThread(
            TurnClient(self.client, fence),
            queued,
            DeliveryLedger(SlackDelivery.from_record(delivery), fence),
            self.me,
            stopped_streams(self.stops, fence, queued.turn),
        )
        view = SlackTurnView(
            thread,
            self.settings,
            sessions=self.sessions,
            stops=self.stops,
            model=self.model,
            approvals=self.approvals,
            decide=self.decide,
            open_link=self.open_link,
        )
        try:
            if delivery:
                await view.resume()
            yield view
        finally:
            await view.close()

    async def post_notice(self, notice: Notice, deadline: Deadline) -> None:
        """Close what the turn left open (a stream, the turn's message or the Stop button's
        message while they still offer a stop, also ones whose ts was never learnt), then
        post the notice once: a notice taken before is looked for first. Every call is made
        within the thread's lease (``deadline``)."""
        client = TurnClient(self.client, deadline)
        record = SlackDelivery.from_record(notice.delivery)
        turn = Turn(notice.team, notice.channel, notice.thread_ts, "", "", notice.message_ts)
        found: list[OwnMessage] | None = None

        async def own() -> list[OwnMessage]:
            nonlocal found
            if found is None:
                found = await find_own(client, turn, self.me)
            return found

        with sorted_for_delivery():
            if record.unknown:
                first = first_message(await own(), notice.message_ts, record.segment, record.after)
                record.found(first.ts, streaming=first.streaming)
            if record.ts and record.message in (MessageState.STREAMING, MessageState.POSTED):
                await self._close_turn_message(client, notice, record)
            if record.control is ControlState.POSTING:
                ts = next(
                    (
                        m.ts
                        for m in await own()
                        if m.is_for(notice.message_ts, "control", segment=record.segment)
                    ),
                    "",
                )
                if ts:
                    record.control_shown(ts)
                else:
                    record.control_not_found()
            if record.control is ControlState.SHOWN:
                await self._quietly(
                    client.chat_delete(channel=notice.channel, ts=record.control_ts)
                )
            if self.settings.agent_sessions:
                await self._quietly(
                    client.agents_sessions_setStatus(
                        channel_id=notice.channel, thread_ts=notice.thread_ts, status="active"
                    )
                )
            if not notice.text:
                return
            if notice.taken > 1 and any(m.is_for(notice.message_ts, "notice") for m in await own()):
                return
            await client.chat_postMessage(
                channel=notice.channel,
                thread_ts=notice.thread_ts,
                text=message_text(notice.text),
                blocks=answer_blocks(notice.text),
                metadata=tag(notice.message_ts, notice.id, "notice"),
            )

    async def _close_turn_message(
        self, client: AsyncWebClient, notice: Notice, record: SlackDelivery
    ) -> None:
        """The turn's message stops offering a stop and says it could not finish."""
        ts = record.ts
        private = read_by_requester_alone(notice.channel)
        tasks = [ToolTask.from_record(task) for task in record.tasks]
        for task in tasks:
            if task.open:
                settle_task(task, None)
        if record.message is MessageState.STREAMING:
            await self._quietly(
                client.chat_stopStream(
                    channel=notice.channel,
                    ts=ts,
                    chunks=[task_chunk(task, private=private) for task in tasks] or None,
                    markdown_text=f"\n\n_{STOPPED_NOTE}_",
                    metadata=tag(notice.message_ts, notice.id, "answer", 0, segment=record.segment),
                )
            )
            return
        await self._quietly(
            client.chat_update(
                channel=notice.channel,
                ts=ts,
                text=turn_text(tasks, STOPPED_NOTE, True, private=private),
                blocks=turn_blocks(tasks, f"_{STOPPED_NOTE}_", finished=True, private=private),
                metadata=tag(notice.message_ts, notice.id, "answer", 0, segment=record.segment),
            )
        )

    @staticmethod
    async def _quietly(call: Awaitable[Any]) -> None:
        """A tidying call: what Slack refuses for good (the message is gone, the stream is
        over) is fine; what it refuses for now is raised."""
        try:
            await call
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            if is_temporary(exc):
                raise
            log.info("tidying up failed for good (%s)", error_code(exc))
