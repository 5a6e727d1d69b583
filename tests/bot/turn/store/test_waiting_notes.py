"""The waiting note's record on the real Redis: only the thread's lease holder takes it,
only with a turn queued behind the waiting one, once; a note an earlier owner was posting
is looked for before it is posted again."""

from __future__ import annotations

import pytest

from bot.process.state import State
from bot.turn.model import Turn
from bot.turn.store.waiting_notes import Take

pytestmark = pytest.mark.cluster


def message(ts: str) -> Turn:
    return Turn("T1", "C1", "100.1", "U1", "hi", message_ts=ts, event_id=f"Ev{ts}")


async def test_the_note_is_taken_by_the_lease_holder_once_something_waits_behind(
    state: State,
) -> None:
    notes, queue, locks = state.threads.waiting_notes, state.threads.queue, state.threads.locks
    thread = message("100.1").thread_key
    await queue.enqueue(message("100.1"))  # the turn that waits
    first = await locks.try_acquire(thread, "w1")
    assert first is not None
    assert await notes.take(thread, "card-1", first.token, 60) is Take.NOTHING  # none behind
    assert not await notes.anything_behind(thread)
    await queue.enqueue(message("100.2"))
    assert await notes.anything_behind(thread)
    assert await notes.take(thread, "card-1", "not-the-holder", 60) is Take.NOTHING
    assert await notes.take(thread, "card-1", first.token, 60) is Take.POST
    # This owner stops before it says "posted": the next one looks first.
    await first.release()
    second = await locks.try_acquire(thread, "w2")
    assert second is not None
    assert await notes.take(thread, "card-1", second.token, 60) is Take.LOOK_FIRST
    await notes.posted(thread, "card-1")
    assert await notes.take(thread, "card-1", second.token, 60) is Take.NOTHING
    await queue.enqueue(message("100.3"))  # a third message: still the one note
    assert await notes.take(thread, "card-1", second.token, 60) is Take.NOTHING
    assert await notes.take(thread, "card-2", second.token, 60) is Take.POST  # a new card
    assert 0 < await state.client.ttl(state.keys.waiting_note(thread, "card-1")) <= 60
