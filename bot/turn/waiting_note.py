"""A thread whose turn waits for a person (an approval, or a sign-in to an MCP server) does
not hold its later messages silently: the first time a later turn is found queued behind
the waiting one, the thread gets one note (a link to the card, who may decide; for a
sign-in, that it waits for <@U> to connect the server), and no more for the same card.

The worker looks whenever it meets the waiting turn at the head of its thread (a later
message's entry was read, the waiting turn's own entry came round) and right after the turn
parked (a message that came while it ran). The note is taken in one step with the lease
checked and the thread's queue looked at (bot/turn/store/waiting_notes.py), then posted
within the lease; what fails is logged and tried again at the next look, never raised into
the thread's work. The later turns run in order once the request is decided or expires.
"""

from __future__ import annotations

import logging
import time

from bot.state.redis.errors import REDIS_DOWN
from bot.state.redis.thread_key import ThreadKey
from bot.turn.ports import DeliveryFailed, Undeliverable, WaitingNote
from bot.turn.store.approvals import AFTER_DEADLINE_S, ApprovalRequest, Approvals
from bot.turn.store.lease import Aborted, ThreadLease
from bot.turn.store.waiting_notes import Take, WaitingNotes

log = logging.getLogger(__name__)

OUTAGES: tuple[type[BaseException], ...] = (DeliveryFailed, *REDIS_DOWN)  # tried again later


def the_wait(requests: list[ApprovalRequest]) -> tuple[str, list[ApprovalRequest]]:
    """The card a waiting turn's open requests are shown on (the first of them with a
    card; the first request's id before any card), and its requests (pure). A card shows
    one kind: approvals, or one server's sign-ins."""
    first = next((r for r in requests if r.card_ts), requests[0])
    wait = first.card_ts or first.id
    return wait, [r for r in requests if (r.card_ts or r.id) == wait]


class WaitingTeller:
    def __init__(self, approvals: Approvals, notes: WaitingNotes, note: WaitingNote) -> None:
        self.approvals = approvals
        self.notes = notes
        self.note = note

    async def tell(self, thread: ThreadKey, lease: ThreadLease, entry_id: str) -> None:
        """When a turn is queued behind ``entry_id`` (waiting for an approval), post the
        note for its card once. Never raises but for cancellation."""
        try:
            await self._tell(thread, lease, entry_id)
        except Aborted as exc:
            log.info("the waiting note of %s: %s", thread, exc)
        except OUTAGES as exc:
            log.warning("the waiting note of %s: %s; tried again at the next look", thread, exc)
        except Exception:
            log.exception("the waiting note of %s failed; tried again at the next look", thread)

    async def _tell(self, thread: ThreadKey, lease: ThreadLease, entry_id: str) -> None:
        if not await self.notes.anything_behind(thread):
            return  # the usual look at a waiting turn: one round trip
        requests = [r for r in await self.approvals.of_turn(entry_id) if r.open]
        if not requests:
            return
        wait, shown = the_wait(requests)
        keep_s = int(max(r.deadline for r in shown) - time.time()) + AFTER_DEADLINE_S
        async with lease.bounded("taking the waiting note"):
            taken = await self.notes.take(thread, wait, lease.token, keep_s)
        if taken is Take.NOTHING:
            return
        try:
            await self.note.tell(shown, wait, lease, look_first=taken is Take.LOOK_FIRST)
        except Undeliverable as exc:
            log.warning("the waiting note of %s can never be posted: %s", thread, exc)
        await self.notes.posted(thread, wait)
        log.info("told %s that its later messages wait for the card %s", thread, wait)
