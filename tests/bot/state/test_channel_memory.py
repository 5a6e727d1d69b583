"""A channel's memory: notes added (ids never reused), at most MAX_NOTES a scope and
MAX_NOTE_CHARS a note, saved once per idempotency key, removed, cleared; each change audited
in the same step (on a Redis Cluster too: a scope's keys and its shard's audit share a slot)."""

from __future__ import annotations

import asyncio

import pytest

from bot.process.state import State
from bot.state.audit import AuditKind
from bot.state.channel_memory import (
    MAX_NOTE_CHARS,
    MAX_NOTES,
    Duplicate,
    Full,
    Saved,
    TooLong,
    memory_scope,
)

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


async def test_notes_are_saved_and_read_newest_first(state: State) -> None:
    memory = state.shared.memory
    first = await memory.add(
        "T1", "C0SUPPORT", "The runbook is at go/runbook.", "U1", "C0SUPPORT", "t1:c1"
    )
    second = await memory.add("T1", "C0SUPPORT", "Ünïcode is fine.", "U2", "C0SUPPORT", "t2:c1")
    assert isinstance(first, Saved) and isinstance(second, Saved)
    assert (first.note.id, second.note.id) == ("n1", "n2")
    notes = await memory.notes("C0SUPPORT")
    assert [(n.id, n.text, n.by, n.channel) for n in notes] == [
        ("n2", "Ünïcode is fine.", "U2", "C0SUPPORT"),
        ("n1", "The runbook is at go/runbook.", "U1", "C0SUPPORT"),
    ]
    assert notes[0] == second.note
    assert await memory.notes("C0OTHER") == []
    entry = (await state.shared.audit.latest(1))[0]
    assert (entry.kind, entry.action, entry.actor, entry.target) == (
        AuditKind.MEMORY,
        "remembered",
        "U2",
        "C0SUPPORT",
    )
    assert entry.detail == {
        "id": "n2",
        "text": "Ünïcode is fine.",
        "channel": "C0SUPPORT",
        "team": "T1",
    }


async def test_the_same_key_saves_once(state: State) -> None:
    memory = state.shared.memory
    saved = await memory.add("T1", "C0X", "Deploys are on Tuesdays.", "U1", "C0X", "turn-1:call-1")
    again = await memory.add("T1", "C0X", "Deploys are on Tuesdays.", "U1", "C0X", "turn-1:call-1")
    assert isinstance(saved, Saved) and again == Duplicate(saved.note)
    assert len(await memory.notes("C0X")) == 1
    assert len(await state.shared.audit.latest(10)) == 1
    # Still a duplicate once the note is gone: the call ran, it must not save again.
    await memory.remove("T1", "C0X", "n1", by="U0ADMIN")
    assert await memory.add("T1", "C0X", "x", "U1", "C0X", "turn-1:call-1") == Duplicate(saved.note)


async def test_concurrent_adds_with_one_key_save_one_note(state: State) -> None:
    memory = state.shared.memory
    results = await asyncio.gather(
        *(memory.add("T1", "C0X", "Once.", "U1", "C0X", "same") for _ in range(10))
    )
    assert sum(isinstance(r, Saved) for r in results) == 1
    assert sum(isinstance(r, Duplicate) for r in results) == 9
    assert len(await memory.notes("C0X")) == 1


async def test_a_full_memory_refuses_and_a_long_note_is_refused_not_cut(state: State) -> None:
    memory = state.shared.memory
    too_long = "x" * (MAX_NOTE_CHARS + 1)
    assert await memory.add("T1", "C0X", too_long, "U1", "C0X", "k0") == TooLong(MAX_NOTE_CHARS + 1)
    exact = await memory.add("T1", "C0X", "é" * MAX_NOTE_CHARS, "U1", "C0X", "k-exact")
    assert isinstance(exact, Saved)  # characters, not bytes
    await asyncio.gather(
        *(memory.add("T1", "C0X", f"note {i}", "U1", "C0X", f"k{i}") for i in range(1, MAX_NOTES))
    )
    assert len(await memory.notes("C0X")) == MAX_NOTES
    assert await memory.add("T1", "C0X", "one more", "U1", "C0X", "k-more") == Full()
    assert len(await memory.notes("C0X")) == MAX_NOTES
    assert not any(e.detail.get("text") == "one more" for e in await state.shared.audit.latest(5))


async def test_remove_and_clear_are_audited_and_ids_are_never_reused(state: State) -> None:
    memory = state.shared.memory
    for i in range(3):
        await memory.add("T1", "C0X", f"note {i}", "U1", "C0X", f"k{i}")
    removed = await memory.remove("T1", "C0X", "n2", by="U0ADMIN")
    assert removed is not None and (removed.id, removed.text, removed.by) == ("n2", "note 1", "U1")
    assert await memory.remove("T1", "C0X", "n2", by="U0ADMIN") is None
    assert [n.id for n in await memory.notes("C0X")] == ["n3", "n1"]
    entry = (await state.shared.audit.latest(1))[0]
    assert (entry.action, entry.actor, entry.target) == ("forgotten", "U0ADMIN", "C0X")
    assert entry.detail == {"id": "n2", "text": "note 1", "channel": "C0X", "team": "T1"}

    assert await memory.clear("T1", "C0X", by="U0ADMIN") == 2
    assert await memory.notes("C0X") == []
    entry = (await state.shared.audit.latest(1))[0]
    assert (entry.action, entry.target, entry.detail) == (
        "cleared",
        "C0X",
        {"count": 2, "team": "T1"},
    )
    assert await memory.clear("T1", "C0X", by="U0ADMIN") == 0
    assert len(await state.shared.audit.latest(20)) == 5  # nothing audited for nothing cleared

    again = await memory.add("T1", "C0X", "after clearing", "U1", "C0X", "k-after")
    assert isinstance(again, Saved) and again.note.id == "n4"


async def test_a_dm_keeps_the_persons_own_memory(state: State) -> None:
    assert memory_scope("D0ALICE", "U0ALICE") == "user:U0ALICE"
    assert memory_scope("C0SUPPORT", "U0ALICE") == "C0SUPPORT"
    assert memory_scope("G0PRIVATE", "U0ALICE") == "G0PRIVATE"
    scope = memory_scope("D0ALICE", "U0ALICE")
    await state.shared.memory.add("T1", scope, "I like tea.", "U0ALICE", "D0ALICE", "k")
    assert [n.text for n in await state.shared.memory.notes("user:U0ALICE")] == ["I like tea."]
    assert await state.shared.memory.notes("user:U0BOB") == []
