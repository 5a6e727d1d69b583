"""Audit kinds are one enum: each is stored as its word, read back as itself, and a kind
another version wrote reads back as that word (replicas of two versions share the log)."""

from __future__ import annotations

from bot.process.state import State
from bot.state.audit import AuditEntry, AuditKind


async def test_every_kind_is_stored_as_its_word_and_read_back(state: State) -> None:
    audit = state.shared.audit
    for kind in AuditKind:
        await audit.add(AuditEntry(kind, "U1", f"did {kind.value}"))
    latest = await audit.latest(len(AuditKind))
    assert {entry.kind for entry in latest} == set(AuditKind)
    stored = await state.client.xrange(state.keys.audit(state.keys.shards.of("U1")))
    assert sorted(fields["kind"] for _, fields in stored) == sorted(k.value for k in AuditKind)


async def test_a_kind_written_by_another_version_reads_as_itself(state: State) -> None:
    stream = state.keys.audit(state.keys.shards.of("U1"))
    await state.client.xadd(
        stream, {"kind": "someday", "actor": "U1", "action": "x", "at": "1.0", "detail": "{}"}
    )
    [entry] = await state.shared.audit.latest(1)
    assert entry.kind == "someday" and str(entry.kind) == "someday"
    assert entry.kind not in list(AuditKind)
    assert AuditKind("tool") is AuditKind.TOOL
