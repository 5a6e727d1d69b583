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

The owner only drives: what each move writes besides the record is built in
``effects.py``, its spans and counters are in ``telemetry.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace

from opentelemetry import trace

from bot.agent.cancellation import Interrupted, unless
from bot.agent.events import RoundStarted, fan_out
from bot.agent.loop import run_turn
from bot.agent.result import StopReason, TurnResult
from bot.observability.context import TurnContext, turn_context
from bot.observability.observer import TurnTelemetry
from bot.observability.tracing import fail
from bot.state.redis.commands import Commands
from bot.turn import effects, parking, telemetry
from bot.turn.fence import DurableJournal, Durably
from bot.turn.model import Turn
from bot.turn.outcome import GAVE_UP, DeadLettered, Delivered, Delivery, TurnEnd, Waiting
from bot.turn.ports import Agent, DeliveryRecord, Responder, Settled, TurnView
from bot.turn.retry import GaveUp, SlackRetries
from bot.turn.states import TERMINAL, TurnState, settled_state
from bot.turn.store.lease import Aborted, ThreadLease
from bot.turn.store.queue import QueueLook
from bot.turn.store.records import FINISHED_KEEP_S, Looked, Stale, TurnRecord
from bot.turn.store.stores import TurnStores
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
        entry_id: str,
        turn: Turn,
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
        self.entry_id = entry_id
        self.turn = turn
        self.lease = lease
        self.stores = stores
        self.agent = agent
        self.responder = responder
        self.timing = timing
        self.cancel = cancel
        self.handing_back = handing_back
        self.look = look
        self.owned = stores.records.owned(entry_id, turn.thread_key, lease.token)
        self.durably = Durably(entry_id, lease, handing_back)
        self.retries = SlackRetries(
            entry_id,
            lease,
            handing_back,
            timing.retry_start_s,
            timing.retry_max_s,
            timing.deliver_timeout_s,
        )
        self._attempts = 0

    # --- the Fence the Slack view writes through -----------------------------------------

    def valid(self) -> bool:
        return self.lease.valid() and not self._handing_back()

    def time_left(self) -> float:
        return 0.0 if self._handing_back() else self.lease.time_left()

    def bounded(self, what: str) -> AbstractAsyncContextManager[None]:
        if self._handing_back():
            raise Aborted(f"turn {self.entry_id}: handed back ({what})")
        return self.lease.bounded(what)

    def _handing_back(self) -> bool:
        return self.handing_back is not None and self.handing_back.is_set()

    async def save_delivery(self, record: DeliveryRecord) -> None:
        if not self.valid():
            raise Aborted(f"turn {self.entry_id}: the lease is gone")
        try:
            async with self.bounded("saving the delivery record"):
                await self.owned.save(delivery=record)
        except Stale as exc:
            self.lease.lost.set()
            raise Aborted(f"lost the lock of {self.turn.thread_key}") from exc

    async def move(self, target: TurnState, fields: dict[str, str], commands: Commands) -> None:
        """A fenced move, made durably (parking uses it)."""
        await self.durably(lambda: self.owned.move(target, fields, commands))

    # --- the life of the turn ------------------------------------------------------------

    async def run(self) -> TurnEnd | None:
        """One attempt; None when an earlier owner had finished the turn already."""
        turn = self.turn
        context = TurnContext(self.entry_id, turn.team, turn.channel, turn.thread_ts, turn.user)
        with turn_context(context), telemetry.attempt_span(turn, self.entry_id) as span:
            try:
                return await self._run_attempt()
            except Aborted as exc:
                if span.is_recording():
                    span.set_attribute("slack_agent.aborted", str(exc))
                raise
            except Exception as exc:
                fail(span, type(exc).__name__)
                raise

    async def _run_attempt(self) -> TurnEnd | None:
        try:
            return await self._run()
        except Stale as exc:
            self.lease.lost.set()
            raise Aborted(f"lost the lock of {self.turn.thread_key}") from exc
        except Aborted:
            if self.handing_back is not None and self.handing_back.is_set():
                await self._uncount_attempt()
            raise

    async def _uncount_attempt(self) -> None:
        """A turn handed back at shutdown, or found still waiting for a person, did not
        fail: its attempt does not count."""
        if not self.lease.valid():
            return
        try:
            await self.owned.save(attempts=str(max(self._attempts - 1, 0)))
        except Exception:
            log.debug("could not uncount the attempt of %s", self.entry_id, exc_info=True)

    async def _run(self) -> TurnEnd | None:
        history_ttl_s = self.stores.history.idle_ttl_s
        record = await self.durably(lambda: self.owned.begin(history_ttl_s))
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
            if not await parking.unpark(self.stores, self.turn, self.entry_id, record, self):
                await self._uncount_attempt()
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
                self.entry_id,
                self.turn.thread_key,
                record.attempts,
                record.state.value,
                record.round,
            )
        async with self.responder.view(self.turn, self.entry_id, record.delivery, self) as view:
            if record.state is TurnState.RUNNING:
                ran = await self._run_loop(view, record)
                if not isinstance(ran, TurnRecord):
                    return ran  # parked, or given up while showing the approval card
                record = ran
            delivery = await self._deliver(view, record)
        return delivery

    async def _run_loop(
        self, view: TurnView, record: TurnRecord
    ) -> TurnRecord | Waiting | DeadLettered:
        agent, turn = self.agent, self.turn
        toolset = await agent.toolset_for(turn, self.entry_id, self)
        scope = requester_scope(turn.user, toolset)  # withholds what this person may not see
        history = await self.stores.history.for_model(
            turn.thread_key, agent.history_budget, agent.estimator, scope, record.history
        )
        context = await agent.context_for(turn)
        log.debug("running turn %s: %r", self.entry_id, turn.text)  # the text: DEBUG only
        if not record.journal:
            # Seen at work at once, while the message is read (its files, the thread).
            await view.observe(RoundStarted(1))
        given = await agent.message_for(turn)
        outcome = await unless(
            run_turn(
                await agent.model_for(turn),
                agent.settings,
                [*history, *given.attachments],
                given.message,
                toolset,
                observer=fan_out(view.observe, TurnTelemetry()),
                cancel=self.cancel,
                journal=DurableJournal(self.owned, self.durably),
                resume=record.journal,
                context=context,
            ),
            self.lease.lost,
            self.handing_back,
        )
        if isinstance(outcome, Interrupted):
            raise Aborted(f"turn {self.entry_id} interrupted")
        if outcome.stop_reason is StopReason.PARKED:
            return await self._park(view, outcome, record)
        return await self._settle(outcome, record)

    async def _park(
        self, view: TurnView, result: TurnResult, record: TurnRecord
    ) -> Waiting | DeadLettered:
        """Calls wait for a person: show it, then park (bot/turn/parking.py)."""
        shown = await parking.park(
            self.stores, self.turn, self.entry_id, result, view, self.retries, self
        )
        if isinstance(shown, GaveUp):
            return await self._dead_letter(
                record, view.delivery(), shown.reason, shown.notice, kind=shown.kind
            )
        return Waiting()

    async def _settle(self, result: TurnResult, record: TurnRecord) -> TurnRecord:
        """Store what to show, the turn's messages, usage and audit: one fenced move."""
        if result.error_detail:
            log.warning(
                "turn %s in %s ended %s: %s",
                self.entry_id,
                self.turn.thread_key,
                result.stop_reason.value,
                result.error_detail,
            )
        commands = effects.settle_effects(self.stores, self.turn, self.entry_id, result)
        state = settled_state(result.stop_reason)
        since = time.time()  # delivery starts now: its timeout counts from here
        fields = {
            "text": result.text,
            "outcome": result.stop_reason.value,
            "messages": result.new_messages,
            "delivering_since": repr(since),
        }
        await self.durably(lambda: self.owned.move(state, fields, commands))
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
            stamp = repr(since)
            await self.durably(lambda: self.owned.save(delivering_since=stamp))
        settled = Settled(record.text, record.reason, record.messages)
        shown = await self.retries.until_taken(lambda: view.deliver(settled), since)
        if isinstance(shown, GaveUp):
            return await self._dead_letter(
                record, view.delivery(), shown.reason, shown.notice, kind=shown.kind
            )
        # Delivered and done in one step: in the history, and gone from the queue.
        commands = effects.delivered_effects(self.stores, self.turn, self.entry_id, record.messages)
        await self._last_move(TurnState.DONE, {}, commands)
        telemetry.delivered(record.reason)
        return Delivered()

    async def _done(self) -> None:
        """A turn an earlier build left delivered: the queue forgets it."""
        commands = effects.done_effects(self.stores, self.turn, self.entry_id)
        await self._last_move(TurnState.DONE, {}, commands)

    async def _last_move(
        self, target: TurnState, fields: dict[str, str], commands: Commands
    ) -> None:
        """The move that finishes the turn; it looks at the thread's queue in the same step
        and, when nothing is left, frees the lock there too (the lease then stops)."""
        await self.durably(
            lambda: self.owned.move(
                target, fields, commands, keep_s=FINISHED_KEEP_S, look=self.look
            )
        )
        looked = self.owned.looked
        if looked is not None and looked.next is None:
            self.lease.freed()

    @property
    def next_turn(self) -> Looked | None:
        """What the turn's last move found next in its thread (None: it did not look)."""
        return self.owned.looked

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
        log.error("dead-lettering turn %s in %s: %s", self.entry_id, self.turn.thread_key, reason)
        commands = effects.dead_letter_effects(
            self.stores, self.turn, self.entry_id, record, delivery, reason, notice
        )
        await self._last_move(TurnState.DEAD_LETTERED, {"reason": reason}, commands)
        telemetry.dead_lettered(kind)
        return DeadLettered(reason)
