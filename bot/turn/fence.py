"""The fence one turn's owner speaks through: every write to Redis and every Slack call made
for the turn passes here, and none passes once the owner may no longer speak for it.

- Slack calls (the view, the notices, the questions) and the Redis steps on the way to them
  run :meth:`TurnFence.bounded`: within the thread's lease (bot/turn/store/lease.py), and
  not at all once the process hands its turns back at shutdown.
- The owner's writes (begin, the moves, the saves, the journal) are fenced by the lease's
  token in Redis (bot/turn/store/records.py) and made durably: Redis being away (beyond
  redis-py's own retries) is waited out while the lease holds. Each try is bounded by the
  lease (a Redis that hangs, its packets silently dropped, is given up on at the lease's
  end, not after its socket timeouts). Safe because every move and save is idempotent.

A lost lock (:class:`Stale`), a lost lease or a shutdown ends the attempt with
:class:`Aborted`, and the next owner continues from what was saved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from bot.agent.cancellation import sleep_unless
from bot.agent.execution import not_run
from bot.agent.journal import Message, resume_from
from bot.agent.result import CallOutcome, ToolExecution
from bot.state.redis.commands import Commands
from bot.state.redis.errors import REDIS_DOWN
from bot.turn.model import QueuedTurn
from bot.turn.ports import DeliveryRecord
from bot.turn.states import TurnState
from bot.turn.store.lease import Aborted, ThreadLease
from bot.turn.store.queue import QueueLook
from bot.turn.store.records import FINISHED_KEEP_S, Looked, OwnedTurn, Stale
from bot.turn.store.turn_record import TurnRecord

log = logging.getLogger(__name__)

REDIS_RETRY_START_S = 0.2
REDIS_RETRY_MAX_S = 2.0
T = TypeVar("T")


class TurnFence:
    """One owner's fence around one turn (the :class:`~bot.turn.ports.Fence` the Slack view
    is handed, and the owner's durable writes)."""

    def __init__(
        self,
        queued: QueuedTurn,
        lease: ThreadLease,
        owned: OwnedTurn,
        handing_back: asyncio.Event | None = None,  # the process is shutting down
    ) -> None:
        self.queued = queued
        self.lease = lease
        self.owned = owned
        self.handing_back = handing_back

    # --- may the owner still speak for the turn? ------------------------------------------

    @property
    def handed_back(self) -> bool:
        return self.handing_back is not None and self.handing_back.is_set()

    def valid(self) -> bool:
        return self.lease.valid() and not self.handed_back

    def time_left(self) -> float:
        return 0.0 if self.handed_back else self.lease.time_left()

    def bounded(self, what: str) -> AbstractAsyncContextManager[None]:
        if self.handed_back:
            raise Aborted(f"turn {self.queued.entry_id}: handed back ({what})")
        return self.lease.bounded(what)

    def interrupters(self) -> tuple[asyncio.Event, asyncio.Event | None]:
        """What ends the attempt at once: the lease lost, the turn handed back."""
        return self.lease.lost, self.handing_back

    async def wait(self, seconds: float) -> bool:
        """Sleep, unless the attempt ends first (False)."""
        return await sleep_unless(seconds, *self.interrupters())

    # --- the owner's writes ----------------------------------------------------------------

    async def durably(self, write: Callable[[], Awaitable[T]]) -> T:
        """Run one fenced write until it is made, or the attempt is over."""
        entry_id = self.queued.entry_id
        delay = REDIS_RETRY_START_S
        while True:
            try:
                async with self.lease.bounded(f"a write of turn {entry_id}"):
                    return await write()
            except Stale as exc:
                self.lease.lost.set()
                raise Aborted(f"lost the lock of {self.queued.turn.thread_key}") from exc
            except REDIS_DOWN as exc:
                if not self.lease.valid():
                    raise Aborted(f"turn {entry_id}: Redis away, lease gone") from exc
                log.warning("Redis failed on turn %s (%s); trying again", entry_id, exc)
                if not await self.wait(delay):
                    raise Aborted(f"turn {entry_id} interrupted") from exc
                delay = min(delay * 2, REDIS_RETRY_MAX_S)

    async def begin(self, history_ttl_s: int) -> TurnRecord:
        """Count the attempt and read the turn's record (and a running turn's history)."""
        return await self.durably(lambda: self.owned.begin(history_ttl_s))

    async def move(
        self, target: TurnState, fields: Mapping[str, Any], commands: Commands | None = None
    ) -> None:
        """A fenced move with its side effects in the same step, made durably."""
        await self.durably(lambda: self.owned.move(target, fields, commands))

    async def save(self, **fields: str) -> None:
        """Fields of the record, without a move, made durably."""
        await self.durably(lambda: self.owned.save(**fields))

    async def last_move(
        self, target: TurnState, fields: dict[str, str], commands: Commands, look: QueueLook | None
    ) -> Looked | None:
        """The move that finishes the turn; with ``look`` it looks at the thread's queue in
        the same step and, when nothing is left, frees the lock there too (the lease then
        stops). What it found next, or None when it did not look."""
        await self.durably(
            lambda: self.owned.move(target, fields, commands, keep_s=FINISHED_KEEP_S, look=look)
        )
        looked = self.owned.looked
        if looked is not None and looked.next is None:
            self.lease.freed()
        return looked

    async def save_delivery(self, record: DeliveryRecord) -> None:
        """The Slack view's delivery record (one try: the view's retries are the owner's)."""
        if not self.valid():
            raise Aborted(f"turn {self.queued.entry_id}: the lease is gone")
        try:
            async with self.bounded("saving the delivery record"):
                await self.owned.save(delivery=record)
        except Stale as exc:
            self.lease.lost.set()
            raise Aborted(f"lost the lock of {self.queued.turn.thread_key}") from exc

    async def uncount_attempt(self, attempts: int) -> None:
        """An attempt that did not fail (handed back at shutdown, or found still waiting for
        a person) does not count: the record's attempts back to ``attempts - 1``."""
        if not self.lease.valid():
            return
        try:
            await self.owned.save(attempts=str(max(attempts - 1, 0)))
        except Exception:
            log.debug("could not uncount the attempt of %s", self.queued.entry_id, exc_info=True)

    def journal(
        self, audit: CallAudit | None = None, resume: Sequence[Message] = ()
    ) -> DurableJournal:
        """The turn's journal for the loop; with ``audit``, each call's audit entry is
        written in the step that saves its result (``resume``: what the journal held when
        this attempt began, where a call cut off by a crash is found)."""
        return DurableJournal(self, audit, resume)


# The commands that go with a tool call's saved result (its audit entry).
CallAudit = Callable[[ToolExecution], Commands]


class DurableJournal:
    """The turn's journal for the loop (bot/agent/journal.py): each save is made durably.

    The person's message, first in an empty journal, is held back and saved with the next
    message: a turn that answers at once never needs it (settling stores the turn whole),
    and one that is taken over before anything else was saved starts afresh, as it would
    with only that message saved. One round trip fewer per turn.

    Each tool call is audited in the fenced step that saves its result, so a call one owner
    ran and saved is in the audit log whoever settles the turn, and once (a step refused
    because the lock moved writes no entry; one resent after a lost reply writes none
    again). A call cut off by a crash, before its result was saved, is audited as
    interrupted by the next owner: in the step that saves that result (a call not run
    again) or in the step that claims it for its one run again (which is then audited
    like any call). So each run of a call has one entry: a call run twice, two."""

    def __init__(
        self, fence: TurnFence, audit: CallAudit | None = None, resume: Sequence[Message] = ()
    ) -> None:
        self.fence = fence
        self.owned = fence.owned
        self.audit = audit
        # The executions whose entries it wrote, with their results (by value, not by call
        # id: some models use an id again in a later round).
        self.audited: set[ToolExecution] = set()
        self._resume = resume
        self._held: list[dict[str, Any]] = []

    async def record(self, message: dict[str, Any]) -> None:
        await self._save(message, None)

    async def record_call(self, execution: ToolExecution, message: dict[str, Any]) -> None:
        commands = self.audit(execution) if self.audit is not None else None
        await self._save(message, commands)
        if commands is not None:
            self.audited.add(execution)

    async def _save(self, message: dict[str, Any], commands: Commands | None) -> None:
        if not self._held and self.owned.journaled == 0 and message.get("role") == "user":
            self._held.append(message)
            return
        messages = [*self._held, message]
        await self.fence.durably(lambda: self.owned.record(*messages, commands=commands))
        self._held = []

    async def claim_rerun(self, call_id: str) -> bool:
        commands = self._cut_off(call_id)
        return await self.fence.durably(lambda: self.owned.claim_rerun(call_id, commands))

    def _cut_off(self, call_id: str) -> Commands | None:
        """The audit entry of the run of ``call_id`` that a crash cut off (the call is one
        the journal left without a result)."""
        if self.audit is None:
            return None
        resumed = resume_from(self._resume)
        for call in resumed.open_calls:
            if call.id == call_id:
                return self.audit(not_run(call, resumed.rounds, CallOutcome.INTERRUPTED))
        return None
