"""Working through one thread's queued turns: one at a time, in the order people wrote them.

A worker that reads (or reclaims) an entry takes the thread's lock and works through the
thread's queue: first the turn that was already started (resumed from its record), then the
pending turns by Slack message ts, whichever worker read them. A worker that cannot get the
lock leaves its entry alone: the lock's owner reaches it. After letting the lock go, the
owner looks once more, so a turn that arrived just then is never stranded.

A turn waiting for an approval holds the thread's later turns back; the first time one is
found behind it, the thread is told so, once (bot/turn/waiting_note.py).

Each turn is run by a :class:`~bot.turn.owner.TurnOwner`. At shutdown,
:meth:`ThreadProcessor.hand_back` makes every owner stop and hand its thread back at once.
"""

from __future__ import annotations

import asyncio
import logging

from bot.agent.cancellation import sleep_unless
from bot.observability import metrics
from bot.state.redis.commands import Commands
from bot.state.redis.errors import REDIS_DOWN
from bot.state.redis.thread_key import ThreadKey
from bot.turn import parking
from bot.turn.model import Entry, QueuedTurn, Unreadable
from bot.turn.outcome import DeadLettered, Delivered, Delivery, Waiting
from bot.turn.owner import Timing, TurnOwner
from bot.turn.ports import Agent, Responder, TurnEnded
from bot.turn.states import TurnState
from bot.turn.store.lease import Aborted, ThreadLease, ThreadLocks
from bot.turn.store.queue import QueueLook
from bot.turn.store.stores import TurnStores
from bot.turn.waiting_note import WaitingTeller
from bot.turn.worker.stops import StopWatcher

log = logging.getLogger(__name__)

FAILURE_BACKOFF_S = 1.0  # after a turn attempt fails unexpectedly, times the failures so far


class ThreadProcessor:
    def __init__(
        self,
        stores: TurnStores,
        locks: ThreadLocks,
        agent: Agent,
        responder: Responder,
        stops: StopWatcher,
        timing: Timing,
        *,
        consumer: str,
        failure_backoff_s: float = FAILURE_BACKOFF_S,
        waiting: WaitingTeller | None = None,
        ended: TurnEnded | None = None,
    ) -> None:
        self.stores = stores
        self.locks = locks
        self.agent = agent
        self.responder = responder
        self.stops = stops
        self.timing = timing
        self.consumer = consumer
        self.failure_backoff_s = failure_backoff_s
        self.waiting = waiting  # tells a thread once that its later messages wait
        self.ended = ended  # told when a turn ended (delivered or dead-lettered)
        self.handing_back = asyncio.Event()

    def hand_back(self) -> None:
        """Stop every turn of this process now and let other workers take them over."""
        self.handing_back.set()

    async def handle(self, entry: Entry) -> None:
        """Work on the thread of an entry this worker read or claimed."""
        if isinstance(entry, Unreadable):
            await self._discard_unreadable(entry)
            return
        thread = entry.turn.thread_key
        read = {entry.entry_id: entry}  # no need to read it from the stream again
        look = self.stores.queue.look(thread)
        lease = await self.locks.try_acquire(thread, self.consumer, look=look)
        if lease is None:
            return  # the owner works through this thread, this entry included
        try:
            async with lease.kept_alive():
                await self._drain(thread, lease, look, read)
        finally:
            if lease.released:
                pass  # let go of with nothing queued, in the same step as the last look
            elif lease.lost.is_set() or self.handing_back.is_set():
                await lease.hand_back()
            else:
                await lease.release()  # a turn waiting for a person holds the rest back

    async def _drain(
        self, thread: ThreadKey, lease: ThreadLease, look: QueueLook, read: dict[str, QueuedTurn]
    ) -> None:
        """Run the thread's turns in order, until none is left (the lease is then released
        in the same step as the last look), one waits for a person (the thread's later
        turns wait behind it), the lease is lost, or the process hands its turns back."""
        queue = self.stores.queue
        failures = 0
        found, lease.first = lease.first, None
        while lease.valid() and not self.handing_back.is_set():
            if found is None:
                try:
                    found = await lease.next_or_release(look)
                except Aborted as exc:
                    log.info("stopped working on %s: %s", thread, exc)
                    return
                if found is None:
                    return  # nothing left; the lease is released
            head, state = found
            found = None
            if state == TurnState.AWAITING_APPROVAL and await parking.still_waiting(
                self.stores, head
            ):
                await self._tell_waiting(thread, lease, head)
                return
            entry = read.pop(head, None) or await queue.fetch(head)
            if not isinstance(entry, QueuedTurn):
                if entry is None:
                    # A finished turn leaves the set in the same step, so this entry was
                    # trimmed from the stream (queue.stream_max_len) or Redis lost it.
                    log.warning("turn %s of %s is gone from the stream; skipping it", head, thread)
                else:
                    await self._discard_unreadable(entry)
                await queue.forget(thread, head)
                continue
            lease.entry = head
            try:
                with self.stops.watching(thread) as cancel:
                    owner = TurnOwner(
                        entry,
                        lease,
                        self.stores,
                        self.agent,
                        self.responder,
                        self.timing,
                        cancel=cancel,
                        handing_back=self.handing_back,
                        look=look,
                    )
                    end = await owner.run()
                failures = 0
                if isinstance(end, Delivered | DeadLettered):
                    await self._tell_ended(entry, end)
                if isinstance(end, Waiting):
                    await self._tell_waiting(thread, lease, head)  # messages that came meanwhile
                    return
                if lease.released:
                    return  # nothing left: its last move freed the lock in the same step
                looked = owner.next_turn
                if looked is not None:  # its last move looked at the queue
                    found = looked.next
            except Aborted as exc:
                log.info("stopped working on %s: %s", thread, exc)
                return
            except Exception as exc:
                failures += 1
                if isinstance(exc, REDIS_DOWN):  # one line: an outage is not a bug
                    log.warning(
                        "turn %s in %s: Redis failed (%s); trying it again", head, thread, exc
                    )
                else:
                    log.exception("turn %s in %s failed; trying it again", head, thread)
                if not await sleep_unless(
                    self.failure_backoff_s * failures, lease.lost, self.handing_back
                ):
                    return

    async def _tell_ended(self, queued: QueuedTurn, end: Delivery) -> None:
        """Whoever keeps something about a turn's end is told (its failure only logged:
        the turn is over either way)."""
        if self.ended is None:
            return
        try:
            await self.ended(queued, end)
        except Exception:
            log.exception("after turn %s ended: its bookkeeping failed", queued.entry_id)

    async def _tell_waiting(self, thread: ThreadKey, lease: ThreadLease, head: str) -> None:
        """The thread's later turns wait behind ``head``, which waits for an approval: the
        thread is told so once (bot/turn/waiting_note.py)."""
        if self.waiting is not None and lease.valid():
            await self.waiting.tell(thread, lease, head)

    async def _discard_unreadable(self, entry: Unreadable) -> None:
        log.error("dead-lettering turn %s: its payload is unreadable", entry.entry_id)
        metrics.safely(metrics.DEAD_LETTERS.labels(reason="unreadable").inc)
        queue = self.stores.queue
        commands = Commands()
        self.stores.dead_letters.add_to(commands, entry, "unreadable")
        async with queue.client.pipeline(transaction=True) as pipe:
            for command in commands.items:
                pipe.execute_command(*command)
            queue.remove(pipe, entry.entry_id)
            await pipe.execute()
