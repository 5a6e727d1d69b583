"""Everything shown for one turn: the status first, then the turn's one message.

A :class:`SlackTurnView` lives exactly as long as its turn's owner holds it (an async
context, ``responder.py``). It starts from the turn's delivery record, so a resumed turn
takes over what an earlier attempt left in the thread, and everything it creates is
recorded through the owner's fence. :meth:`observe` is the loop's observer and never waits
on Slack; leaving the context stops its background work and makes no Slack call.
"""

from __future__ import annotations

import json

from bot.agent.events import (
    AgentEvent,
    RoundStarted,
    TextDelta,
    ToolFinished,
    ToolProgress,
    ToolStarted,
)
from bot.config.schema import SlackConfig
from bot.slack.background import Background
from bot.slack.errors import sorted_for_delivery
from bot.slack.outbound import sign_in
from bot.slack.outbound.answer import AnswerWriter
from bot.slack.outbound.approvals import refresh, show_card
from bot.slack.outbound.finish import finish, set_aside
from bot.slack.outbound.status import SessionSupport, TurnStatus
from bot.slack.outbound.thread import TurnThread
from bot.turn.model import Turn, TurnKind
from bot.turn.ports import DeliveryRecord, Settled
from bot.turn.store.approvals import ApprovalRequest, Approvals
from bot.turn.store.stops import StopRequests
from permissions.approval import Deciders


def stop_value(turn: Turn) -> str:
    """What the Stop button carries: the thread, and who asked."""
    return json.dumps(
        {"team": turn.team, "channel": turn.channel, "thread": turn.thread_ts, "user": turn.user},
        separators=(",", ":"),
    )


class SlackTurnView:
    def __init__(
        self,
        thread: TurnThread,
        settings: SlackConfig,
        *,
        sessions: SessionSupport,
        stops: StopRequests | None,
        model: str,
        approvals: Approvals | None,
        decide: Deciders,
        open_link: sign_in.LinkOpener | None = None,
    ) -> None:
        self.thread = thread
        self.approvals = approvals
        self.decide = decide  # who may decide, as the approval cards say
        self.command = settings.command  # the sign-in cards point at `<command> connect`
        self.open_link = open_link  # unseals a sign-in's start link (None: no sign-ins)
        self.background = Background()
        turn = thread.turn
        self.status = TurnStatus(
            thread.client,
            turn,
            settings,
            sessions,
            title_thread=turn.kind is TurnKind.ASSISTANT and turn.new_thread,
        )
        self.fence = thread.ledger.fence

        async def stop_turn() -> None:
            if stops is not None:
                async with self.fence.bounded("asking the turn to stop"):
                    await stops.request(turn.thread_key, turn.user)

        self.answer = AnswerWriter(
            thread,
            self.status,
            settings,
            on_user_stop=stop_turn,
            stop_value=stop_value(turn),
            feedback={"m": model} if settings.feedback else None,
        )
        self._started = False

    async def resume(self) -> None:
        """Take over what an earlier attempt left (best effort; delivery does it for sure),
        and show on its cards what was decided (or expired) meanwhile."""
        await self.answer.resume()
        if self.thread.ledger.record.cards and self.approvals is not None:
            async with self.fence.bounded("showing what was decided on its cards"):
                requests = await self.approvals.of_turn(self.thread.entry_id)
                client = self.thread.client
                await refresh(client, self.approvals, requests, self.decide)
                await sign_in.refresh(
                    client, self.approvals, requests, self.command, self.open_link
                )

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
        with sorted_for_delivery():
            await self.background.settle()  # the status: agent session or not
            if not self._started:  # resumed after the loop: find out about the session again
                self._started = True
                await self.status.start()
            # Its Redis steps as well as its Slack calls end with the lease.
            async with self.fence.bounded("delivering the answer"):
                await finish(self.answer, settled)

    async def park(self, requests: list[ApprovalRequest]) -> None:
        """The turn waits for people to decide ``requests``: its message so far is closed
        (no stream stays open while it waits), and below it go a sign-in card per server
        (for the calls' sign-ins; the person is sent the link where the card cannot carry
        it), then the approval card (for their approvals)."""
        approvals = self.approvals
        if approvals is None:
            raise RuntimeError("this view was built without the approvals store")
        asked = [r for r in requests if not r.sign_in]
        signing_in = [r for r in requests if r.sign_in]
        with sorted_for_delivery():
            await self.background.settle()
            async with self.fence.bounded("showing the cards"):
                await set_aside(self.answer)
                for one_server in sign_in.by_server(signing_in):
                    await sign_in.show_sign_in(
                        self.thread, approvals, one_server, self.command, self.open_link
                    )
                if asked:
                    await show_card(self.thread, approvals, asked, self.decide)

    def delivery(self) -> DeliveryRecord:
        return self.thread.ledger.record.to_record()

    async def close(self) -> None:
        await self.background.close()
        await self.answer.close()
