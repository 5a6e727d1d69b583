"""One turn, from the moment its thread's lock is held until it is acknowledged.

The owner reads the turn's record and carries it forward, one fenced move at a time::

    begin ─► (running) run the loop ─► settle ─► deliver (retried) ─► delivered ─► done
                                                          └─ too long ─► dead-lettered

Whatever the previous owner left (a journal, a settled answer, a half-written Slack thread)
is picked up from the record, so a crash anywhere repeats no finished work and shows
nothing twice. The Slack view is an async context held for the whole turn; leaving it only
stops its background work. Losing the lease or handing the turn back at shutdown raises
:class:`Aborted`: the owner stops at once and writes nothing more, and the next owner
continues from the record.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from bot.agent.cancellation import Interrupted, sleep_unless, unless
from bot.agent.events import RoundStarted, fan_out
from bot.agent.journal import resume_from
from bot.agent.loop import LoopSettings, run_turn
from bot.agent.messages import user_message
from bot.agent.result import TurnResult
from bot.llm.client import ChatModel
from bot.llm.tokens import TokenEstimator
from bot.observability import metrics
from bot.observability.context import TurnContext, turn_context
from bot.observability.observer import TurnTelemetry
from bot.observability.tracing import context_from, fail, tracer
from bot.state.audit import AuditEntry, AuditLog
from bot.state.commands import Commands
from bot.state.errors import REDIS_DOWN
from bot.state.history import RedisHistory
from bot.turn.model import Turn
from bot.turn.responder import (
    GAVE_UP,
    NOT_DELIVERED,
    Aborted,
    DeliveryFailed,
    DeliveryRecord,
    Responder,
    Settled,
    TurnView,
    Undeliverable,
)
from bot.turn.states import TERMINAL, TurnState, settled_state
from bot.turn.store.lease import ThreadLease
from bot.turn.store.notices import Notice, Notices
from bot.turn.store.queue import TurnQueue
from bot.turn.store.records import FINISHED_KEEP_S, Stale, TurnRecord, TurnRecords
from tools.toolset import Toolset

log = logging.getLogger(__name__)

ToolsetFor = Callable[[Turn], Awaitable[Toolset]]
ContextFor = Callable[[Turn], Awaitable[str]]


async def no_context(turn: Turn) -> str:
    return ""


@dataclass(frozen=True)
class TurnInput:
    """What the model is given for a turn: the user message (journaled and kept in history)
    and messages shown with it for this turn only, never stored (pictures)."""

    message: dict[str, Any]
    attachments: list[dict[str, Any]] = field(default_factory=list)


MessageFor = Callable[[Turn], Awaitable[TurnInput]]


async def plain_message(turn: Turn) -> TurnInput:
    return TurnInput(user_message(turn.text))


ARGUMENTS_IN_AUDIT = 500
REDIS_RETRY_START_S = 0.2
REDIS_RETRY_MAX_S = 2.0
T = TypeVar("T")


@dataclass
class Agent:
    """What running a turn needs besides state: the model, loop settings and tools."""

    model: ChatModel
    settings: LoopSettings
    toolset_for: ToolsetFor
    history_budget: int
    estimator: TokenEstimator
    context_for: ContextFor = no_context  # what the surface knows (the channel in view)
    message_for: MessageFor = plain_message  # the user message (with files, the thread...)


@dataclass
class TurnStores:
    """The Redis stores a turn's owner writes to, and nothing else."""

    records: TurnRecords
    queue: TurnQueue
    history: RedisHistory
    audit: AuditLog
    usage: Any  # UsageCounters (add_to)
    notices: Notices


@dataclass(frozen=True)
class Timing:
    max_attempts: int = 3
    deliver_timeout_s: float = 600.0  # then the turn is dead-lettered and the person told
    retry_start_s: float = 1.0  # first wait before delivering again
    retry_max_s: float = 30.0


class DurableJournal:
    """The turn's journal for the loop: each save waits out a short Redis outage while the
    lease holds, and a lost lease ends the turn (the next owner resumes from what was
    saved)."""

    def __init__(self, owner: TurnOwner) -> None:
        self.owner = owner

    async def record(self, message: dict[str, Any]) -> None:
        await self.owner._durably(lambda: self.owner.owned.record(message))

    async def claim_rerun(self, call_id: str) -> bool:
        return await self.owner._durably(lambda: self.owner.owned.claim_rerun(call_id))


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
        cancel: Any = None,  # asyncio.Event: a Stop request
        handing_back: Any = None,  # asyncio.Event: the process is shutting down
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
        self.owned = stores.records.owned(entry_id, turn.thread_key, lease.token)
        self._attempts = 0

    # --- the Fence the Slack view writes through -----------------------------------------

    def valid(self) -> bool:
        return self.lease.valid() and not (self.handing_back and self.handing_back.is_set())

    async def save_delivery(self, record: DeliveryRecord) -> None:
        if not self.valid():
            raise Aborted(f"turn {self.entry_id}: the lease is gone")
        try:
            await self.owned.save(delivery=record)
        except Stale as exc:
            self.lease.lost.set()
            raise Aborted(f"lost the lock of {self.turn.thread_key}") from exc

    async def _durably(self, write: Callable[[], Awaitable[T]]) -> T:
        """A write that must happen: Redis being away for a moment (beyond redis-py's own
        retries) is waited out while the lease holds. Safe because moves and saves are
        idempotent."""
        delay = REDIS_RETRY_START_S
        while True:
            try:
                return await write()
            except REDIS_DOWN as exc:
                if not self.lease.valid():
                    raise Aborted(f"turn {self.entry_id}: Redis away, lease gone") from exc
                log.warning("Redis failed on turn %s (%s); trying again", self.entry_id, exc)
                if not await sleep_unless(delay, self.lease.lost, self.handing_back):
                    raise Aborted(f"turn {self.entry_id} interrupted") from exc
                delay = min(delay * 2, REDIS_RETRY_MAX_S)

    # --- the life of the turn ------------------------------------------------------------

    async def run(self) -> None:
        turn = self.turn
        context = TurnContext(self.entry_id, turn.team, turn.channel, turn.thread_ts, turn.user)
        # One span per attempt, the child of the ingress span whose traceparent the queued
        # turn carries: the turn's trace crosses the queue.
        with (
            turn_context(context),
            tracer().start_as_current_span(
                "slack_agent.turn",
                context=context_from(turn.traceparent),
                kind=SpanKind.CONSUMER,
                attributes={
                    "slack_agent.turn.id": self.entry_id,
                    "slack_agent.turn.kind": turn.kind.value,
                    "slack.team_id": turn.team,
                    "slack.channel_id": turn.channel,
                    "slack.thread_ts": turn.thread_ts,
                },
                record_exception=False,
                set_status_on_exception=False,
            ) as span,
        ):
            try:
                await self._run_attempt()
            except Aborted as exc:
                if span.is_recording():
                    span.set_attribute("slack_agent.aborted", str(exc))
                raise
            except Exception as exc:
                fail(span, type(exc).__name__)
                raise

    async def _run_attempt(self) -> None:
        try:
            await self._run()
        except Stale as exc:
            self.lease.lost.set()
            raise Aborted(f"lost the lock of {self.turn.thread_key}") from exc
        except Aborted:
            if self.handing_back is not None and self.handing_back.is_set():
                await self._uncount_attempt()
            raise

    async def _uncount_attempt(self) -> None:
        """A turn handed back at shutdown did not fail: its attempt does not count."""
        if not self.lease.valid():
            return
        try:
            await self.owned.save(attempts=str(max(self._attempts - 1, 0)))
        except Exception:
            log.debug("could not uncount the attempt of %s", self.entry_id, exc_info=True)

    async def _run(self) -> None:
        record = await self.owned.begin()
        self._attempts = record.attempts
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("slack_agent.attempt", record.attempts)
            span.set_attribute("slack_agent.state", record.state.value)
        if record.state in TERMINAL:
            return  # finished by an earlier owner; its last move cleared the queue
        if record.state is TurnState.DELIVERED:
            await self._done()
            return
        if record.attempts > self.timing.max_attempts:
            await self._dead_letter(
                record,
                record.delivery,
                f"failed {self.timing.max_attempts} attempts",
                GAVE_UP,
                kind="attempts",
            )
            return
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
                record = await self._run_loop(view, record)
            if not await self._deliver(view, record):
                return
        await self._done()

    async def _run_loop(self, view: TurnView, record: TurnRecord) -> TurnRecord:
        agent, turn = self.agent, self.turn
        history = await self.stores.history.for_model(
            turn.thread_key, agent.history_budget, agent.estimator
        )
        toolset = await agent.toolset_for(turn)
        context = await agent.context_for(turn)
        log.debug("running turn %s: %r", self.entry_id, turn.text)  # the text: DEBUG only
        if not record.journal:
            # Seen at work at once, while the message is read (its files, the thread).
            await view.observe(RoundStarted(1))
        given = await agent.message_for(turn)
        outcome = await unless(
            run_turn(
                agent.model,
                agent.settings,
                [*history, *given.attachments],
                given.message,
                toolset,
                observer=fan_out(view.observe, TurnTelemetry()),
                cancel=self.cancel,
                journal=DurableJournal(self),
                resume=record.journal,
                context=context,
            ),
            self.lease.lost,
            self.handing_back,
        )
        if isinstance(outcome, Interrupted):
            raise Aborted(f"turn {self.entry_id} interrupted")
        return await self._settle(outcome, record)

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
        turn = self.turn
        commands = Commands()
        for execution in result.executions:
            self.stores.audit.add_to(
                commands,
                AuditEntry(
                    kind="tool",
                    actor=turn.user,
                    action=execution.name,
                    outcome="ok" if execution.ok else str(execution.error),
                    detail={
                        "arguments": execution.arguments[:ARGUMENTS_IN_AUDIT],
                        "duration_ms": round(execution.duration_ms, 1),
                        "channel": turn.channel,
                        "thread": turn.thread_ts,
                        "turn": self.entry_id,
                    },
                ),
            )
        self.stores.usage.add_to(commands, turn.team, turn.user, result.usage, result.cost)
        state = settled_state(result.stop_reason)
        since = time.time()  # delivery starts now: its timeout counts from here
        fields = {
            "text": result.text,
            "outcome": result.stop_reason.value,
            "messages": result.new_messages,
            "delivering_since": repr(since),
        }
        await self._durably(lambda: self.owned.move(state, fields, commands))
        settled(result)
        return TurnRecord(
            state=state,
            attempts=record.attempts,
            round=result.rounds,
            text=result.text,
            outcome=result.stop_reason.value,
            messages=result.new_messages,
            delivering_since=since,
        )

    async def _deliver(self, view: TurnView, record: TurnRecord) -> bool:
        """Deliver until Slack takes it; False when the turn was dead-lettered instead."""
        since = record.delivering_since
        if since is None:
            since = time.time()
            stamp = repr(since)
            await self._durably(lambda: self.owned.save(delivering_since=stamp))
        delay = self.timing.retry_start_s
        while True:
            if not self.valid():
                raise Aborted(f"turn {self.entry_id}: lease gone before delivery")
            try:
                with delivery_span():
                    await view.deliver(Settled(record.text, record.outcome, record.messages))
                break
            except Undeliverable as exc:
                log.error("turn %s can never be delivered: %s", self.entry_id, exc)
                # Nothing to say to the person there, but what the turn left open is tidied.
                await self._dead_letter(
                    record, view.delivery(), f"undeliverable: {exc}", "", kind="undeliverable"
                )
                return False
            except DeliveryFailed as exc:
                waited = time.time() - since
                left = self.timing.deliver_timeout_s - waited
                if left <= 0:
                    log.error(
                        "Slack refused turn %s for %.0f s (%s); giving up on it",
                        self.entry_id,
                        waited,
                        exc,
                    )
                    await self._dead_letter(
                        record,
                        view.delivery(),
                        "Slack refused the answer",
                        NOT_DELIVERED,
                        kind="delivery_timeout",
                    )
                    return False
                metrics.safely(metrics.DELIVERY_RETRIES.inc)
                log.warning(
                    "Slack did not take turn %s (%s); trying again in %.0f s",
                    self.entry_id,
                    exc,
                    min(delay, left),
                )
                if not await sleep_unless(min(delay, left), self.lease.lost, self.handing_back):
                    raise Aborted(f"turn {self.entry_id} interrupted while delivering") from None
                delay = min(delay * 2, self.timing.retry_max_s)
        commands = Commands()
        self.stores.history.append_to(
            commands, self.turn.thread_key, record.messages, turn=self.entry_id, delivered=True
        )
        await self._durably(lambda: self.owned.move(TurnState.DELIVERED, {}, commands))
        delivered(record.outcome or "answered")
        return True

    async def _done(self) -> None:
        commands = Commands()
        self.stores.queue.finish(commands, self.turn.thread_key, self.entry_id)
        self.stores.records.finish_commands(commands, self.entry_id)
        await self._durably(
            lambda: self.owned.move(TurnState.DONE, {}, commands, keep_s=FINISHED_KEEP_S)
        )

    async def _dead_letter(
        self,
        record: TurnRecord,
        delivery: DeliveryRecord,
        reason: str,
        notice: str,
        *,
        kind: str,
    ) -> None:
        """Give the turn up: keep it in the dead letters, in history as never shown, owe the
        person a plain message (``notice``; "" when there is nothing to say, only what the
        turn left open in Slack to tidy), audit it, and let the thread go on."""
        log.error("dead-lettering turn %s in %s: %s", self.entry_id, self.turn.thread_key, reason)
        turn, stores = self.turn, self.stores
        commands = Commands()
        stores.queue.dead_letter(commands, turn, self.entry_id, reason)
        messages = record.messages or resume_from(record.journal).messages
        stores.history.append_to(
            commands,
            turn.thread_key,
            messages or [user_message(turn.text)],
            turn=self.entry_id,
            delivered=False,
        )
        if notice or delivery:
            stores.notices.add_to(
                commands,
                Notice(
                    id=self.entry_id,
                    team=turn.team,
                    channel=turn.channel,
                    thread_ts=turn.thread_ts,
                    message_ts=turn.message_ts,
                    text=notice,
                    delivery=delivery,
                ),
            )
        stores.audit.add_to(
            commands,
            AuditEntry(
                kind="turn",
                actor=turn.user,
                action="dead_letter",
                outcome=reason,
                detail={"channel": turn.channel, "thread": turn.thread_ts, "turn": self.entry_id},
            ),
        )
        stores.queue.finish(commands, turn.thread_key, self.entry_id)
        stores.records.finish_commands(commands, self.entry_id)
        await self._durably(
            lambda: self.owned.move(
                TurnState.DEAD_LETTERED, {"reason": reason}, commands, keep_s=FINISHED_KEEP_S
            )
        )
        dead_lettered(kind)


def settled(result: TurnResult) -> None:
    """Count a settled turn's rounds (its outcome is counted once its fate is known)."""
    metrics.safely(lambda: metrics.TURN_ROUNDS.observe(result.rounds))


def delivered(outcome: str) -> None:
    """Count a delivered turn under its outcome; a turn given up counts as dead_lettered
    instead, so each turn is counted once."""
    metrics.safely(lambda: metrics.TURNS.labels(outcome=outcome).inc())


def dead_lettered(kind: str) -> None:
    def record() -> None:
        metrics.DEAD_LETTERS.labels(reason=kind).inc()
        metrics.TURNS.labels(outcome="dead_lettered").inc()

    metrics.safely(record)


@contextlib.contextmanager
def delivery_span() -> Iterator[None]:
    """A span around one attempt to deliver the answer to Slack."""
    with tracer().start_as_current_span(
        "slack.deliver", record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield
        except BaseException as exc:
            fail(span, type(exc).__name__)
            raise
