"""One turn, from the moment its thread's lock is held until it is acknowledged.

The owner reads the turn's record and carries it forward, one fenced move at a time::

    begin ─► (running) run the loop ─► settle ─► deliver (retried) ─► done (delivered)
                   │    ▲                                 └─ too long ─► dead-lettered
                   └─ park ─► (awaiting approval: nothing held) ─► resumed on a decision

Whatever the previous owner left (a journal, a settled answer, a half-written Slack thread)
is picked up from the record, so a crash anywhere repeats no finished work and shows
nothing twice. The Slack view is an async context held for the whole turn; leaving it only
stops its background work. Losing the lease or handing the turn back at shutdown raises
:class:`Aborted`: the owner stops at once and writes nothing more, and the next owner
continues from the record.

The owner only drives: every write and Slack call goes through its fence (``fence.py``),
what each move writes besides the record is built in ``effects.py``, its spans and counters
are in ``telemetry.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import partial

from opentelemetry import trace

from bot.agent.cancellation import Interrupted, unless
from bot.agent.events import RoundStarted, fan_out
from bot.agent.loop import run_turn
from bot.agent.result import StopReason, ToolExecution, TurnResult
from bot.observability.context import TurnContext, turn_context
from bot.observability.tracing import fail
from bot.state.redis.commands import Commands
from bot.turn import effects, parking, telemetry
from bot.turn.fence import TurnFence
from bot.turn.model import QueuedTurn
from bot.turn.outcome import GAVE_UP, DeadLettered, Delivered, Delivery, TurnEnd, Waiting
from bot.turn.ports import Agent, DeliveryRecord, Responder, Settled, TurnView
from bot.turn.retry import GaveUp, SlackRetries
from bot.turn.states import TERMINAL, TurnState, settled_state
from bot.turn.store.lease import Aborted, ThreadLease
from bot.turn.store.queue import QueueLook
from bot.turn.store.records import Looked
from bot.turn.store.stores import TurnStores
from bot.turn.store.turn_record import TurnRecord
from bot.turn.tool_telemetry import TurnTelemetry
from permissions.withholding import requester_scope

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timing:
    max_attempts: int = 3
    deliver_timeout_s: float = 600.0  # then the turn is dead-lettered and the person told
    retry_start_s: float = 1.0  # first wait before delivering again
    retry_max_s: float = 30.0


class TurnOwner:
    def __init__(
        self,
        queued: QueuedTurn,
        lease: ThreadLease,
        stores: TurnStores,
        agent: Agent,
        responder: Responder,
        timing: Timing,
        *,
        cancel: asyncio.Event | None = None,  # a Stop request
        handing_back: asyncio.Event | None = None,  # the process is shutting down
        look: QueueLook | None = None,  # the turn's last move looks at its thread's queue
    ) -> None:
        self.queued = queued
        self.stores = stores
        self.agent = agent
        self.responder = responder
        self.timing = timing
        self.cancel = cancel
        self.look = look
        owned = stores.records.owned(queued.entry_id, queued.turn.thread_key, lease.token)
        self.fence = TurnFence(queued, lease, owned, handing_back)
        self.retries = SlackRetries(
            self.fence, timing.retry_start_s, timing.retry_max_s, timing.deliver_timeout_s
        )
        self.next_turn: Looked | None = None  # what the turn's last move found next
        self._attempts = 0

    async def run(self) -> TurnEnd | None:
        """One attempt; None when an earlier owner had finished the turn already."""
        queued, turn = self.queued, self.queued.turn
        context = TurnContext(queued.entry_id, turn.team, turn.channel, turn.thread_ts, turn.user)
        with turn_context(context), telemetry.attempt_span(queued) as span:
            try:
                return await self._run()
            except Aborted as exc:
                if self.fence.handed_back:
                    await self.fence.uncount_attempt(self._attempts)
                if span.is_recording():
                    span.set_attribute("slack_agent.aborted", str(exc))
                raise
            except Exception as exc:
                fail(span, type(exc).__name__)
                raise

    async def _run(self) -> TurnEnd | None:
        record = await self.fence.begin(self.stores.history.idle_ttl_s)
        self._attempts = record.attempts
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("slack_agent.attempt", record.attempts)
            span.set_attribute("slack_agent.state", record.state.value)
        if record.state in TERMINAL:
            return None  # finished by an earlier owner; its last move cleared the queue
        if record.state is TurnState.DELIVERED:
            await self._done()
            return Delivered()
        if record.state is TurnState.AWAITING_APPROVAL:
            if not await parking.unpark(self.stores, self.queued, record, self.fence):
                await self.fence.uncount_attempt(self._attempts)
                return Waiting()
            record = replace(record, state=TurnState.RUNNING, parked=[])
        if record.attempts > self.timing.max_attempts:
            return await self._dead_letter(
                record,
                record.delivery,
                f"failed {self.timing.max_attempts} attempts",
                GAVE_UP,
                kind="attempts",
            )
        if record.attempts > 1:
            log.info(
                "resuming turn %s in %s (attempt %d, %s, round %d)",
                self.queued.entry_id,
                self.queued.turn.thread_key,
                record.attempts,
                record.state.value,
                record.round,
            )
        async with self.responder.view(self.queued, record.delivery, self.fence) as view:
            if record.state is TurnState.RUNNING:
                ran = await self._run_loop(view, record)
                if not isinstance(ran, TurnRecord):
                    return ran  # parked, or given up while showing the approval card
                record = ran
            return await self._deliver(view, record)

    async def _run_loop(
        self, view: TurnView, record: TurnRecord
    ) -> TurnRecord | Waiting | DeadLettered:
        agent, queued, turn = self.agent, self.queued, self.queued.turn
        # Read once, given to the tools, the context and the model alike.
        channel = await agent.channel_for(turn)
        toolset = await agent.toolset_for(queued, self.fence, channel)
        scope = requester_scope(turn.user, toolset)  # withholds what this person may not see
        history = await self.stores.history.for_model(
            turn.thread_key, agent.history_budget, agent.estimator, scope, record.history
        )
        context = await agent.context_for(turn, channel)
        log.debug("running turn %s: %r", queued.entry_id, turn.text)  # the text: DEBUG only
        if not record.journal:
            # Seen at work at once, while the message is read (its files, the thread).
            await view.observe(RoundStarted(1))
        given = await agent.message_for(turn)
        # Each call audited in the step that saves its result (effects.call_effects).
        journal = self.fence.journal(
            partial(effects.call_effects, self.stores, queued), record.journal
        )
        outcome = await unless(
            run_turn(
                await agent.model_for(turn, channel),
                agent.settings,
                [*history, *given.attachments],
                given.message,
                toolset,
                observer=fan_out(view.observe, TurnTelemetry()),
                cancel=self.cancel,
                journal=journal,
                resume=record.journal,
                context=context,
            ),
            *self.fence.interrupters(),
        )
        if isinstance(outcome, Interrupted):
            raise Aborted(f"turn {queued.entry_id} interrupted")
        if outcome.stop_reason is StopReason.PARKED:
            return await self._park(view, outcome, record, journal.audited)
        return await self._settle(outcome, record, journal.audited)

    async def _park(
        self,
        view: TurnView,
        result: TurnResult,
        record: TurnRecord,
        audited: Collection[ToolExecution],
    ) -> Waiting | DeadLettered:
        """Calls wait for a person: show it, then park (bot/turn/parking.py)."""
        shown = await parking.park(
            self.stores, self.queued, result, view, self.retries, self.fence, audited
        )
        if isinstance(shown, GaveUp):
            return await self._dead_letter(
                record, view.delivery(), shown.reason, shown.notice, kind=shown.kind
            )
        return Waiting()

    async def _settle(
        self, result: TurnResult, record: TurnRecord, audited: Collection[ToolExecution]
    ) -> TurnRecord:
        """Store what to show, the turn's messages and usage, and audit the calls not
        audited with their journaled results (``audited``): one fenced move."""
        if result.error_detail:
            log.warning(
                "turn %s in %s ended %s: %s",
                self.queued.entry_id,
                self.queued.turn.thread_key,
                result.stop_reason.value,
                result.error_detail,
            )
        commands = effects.settle_effects(self.stores, self.queued, result, audited)
        state = settled_state(result.stop_reason)
        since = time.time()  # delivery starts now: its timeout counts from here
        fields = {
            "text": result.text,
            "outcome": result.stop_reason.value,
            "messages": result.new_messages,
            "delivering_since": repr(since),
        }
        await self.fence.move(state, fields, commands)
        telemetry.settled(result)
        return TurnRecord(
            state=state,
            attempts=record.attempts,
            round=result.rounds,
            text=result.text,
            outcome=result.stop_reason,
            messages=result.new_messages,
            delivering_since=since,
        )

    async def _deliver(self, view: TurnView, record: TurnRecord) -> Delivery:
        """Deliver until Slack takes it, or give the turn up."""
        since = record.delivering_since
        if since is None:
            since = time.time()
            await self.fence.save(delivering_since=repr(since))
        settled = Settled(record.text, record.reason, record.messages)
        shown = await self.retries.until_taken(lambda: view.deliver(settled), since)
        if isinstance(shown, GaveUp):
            return await self._dead_letter(
                record, view.delivery(), shown.reason, shown.notice, kind=shown.kind
            )
        # Delivered and done in one step: in the history, and gone from the queue.
        commands = effects.delivered_effects(self.stores, self.queued, record.messages)
        await self._last_move(TurnState.DONE, {}, commands)
        telemetry.delivered(record.reason)
        return Delivered(record.reason)

    async def _done(self) -> None:
        """A turn an earlier build left delivered: the queue forgets it."""
        commands = effects.done_effects(self.stores, self.queued)
        await self._last_move(TurnState.DONE, {}, commands)

    async def _last_move(
        self, target: TurnState, fields: dict[str, str], commands: Commands
    ) -> None:
        self.next_turn = await self.fence.last_move(target, fields, commands, self.look)

    async def _dead_letter(
        self,
        record: TurnRecord,
        delivery: DeliveryRecord,
        reason: str,
        notice: str,
        *,
        kind: str,
    ) -> DeadLettered:
        """Give the turn up: keep it in the dead letters, in history as never shown, owe the
        person a plain message (``notice``; "" when there is nothing to say, only what the
        turn left open in Slack to tidy), audit it, and let the thread go on."""
        log.error(
            "dead-lettering turn %s in %s: %s",
            self.queued.entry_id,
            self.queued.turn.thread_key,
            reason,
        )
        commands = effects.dead_letter_effects(
            self.stores, self.queued, record, delivery, reason, notice
        )
        await self._last_move(TurnState.DEAD_LETTERED, {"reason": reason}, commands)
        telemetry.dead_lettered(kind)
        return DeadLettered(reason)
