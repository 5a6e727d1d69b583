"""A channel's memory (in a DM: the person's own): the notes people asked the bot to remember
(the ``remember`` tool), each with who saved it, when and where.

One hash per scope (``keys.memory``: note id -> JSON ``{text, by, at, channel}``) in the
scope's shard, beside its counter of note numbers (ids ``n1``, ``n2``… are never reused, not
even after ``clear``) and that shard's audit stream. Every change is one Lua step that
writes its audit entry too. A note is saved once per idempotency key (a turn's call: run
again after a crash, it finds its note), at most ``MAX_NOTES`` notes a scope, at most
``MAX_NOTE_CHARS`` characters a note (a longer one is refused, never cut)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from bot.state.audit import AUDIT_LUA, AuditEntry, AuditKind, AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys

MAX_NOTES = 50  # per channel, or per person (DMs)
MAX_NOTE_CHARS = 500
SAVED_KEY_S = 7 * 24 * 3600  # how long a call's idempotency key keeps its note

# KEYS: the notes, the note counter, the call's idempotency key, the shard's audit stream
# ARGV: the note's JSON, MAX_NOTES, the key's lifetime, audit length, then the audit fields
# Returns {'saved', id}, {'duplicate', '<id> <note JSON>'} or {'full', ''}.
ADD = (
    AUDIT_LUA
    + """
local saved = redis.call('GET', KEYS[3])
if saved then return {'duplicate', saved} end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then return {'full', ''} end
local id = 'n' .. redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], id, ARGV[1])
redis.call('SET', KEYS[3], id .. ' ' .. ARGV[1], 'EX', ARGV[3])
audit(KEYS[4], ARGV[4], 5, {id = id})
return {'saved', id}
"""
)

# KEYS: the notes, the shard's audit stream; ARGV: note id, audit length, then the audit
# fields. Returns the note's JSON (false: no such note).
REMOVE = (
    AUDIT_LUA
    + """
local note = redis.call('HGET', KEYS[1], ARGV[1])
if not note then return false end
redis.call('HDEL', KEYS[1], ARGV[1])
local saved = cjson.decode(note)
audit(KEYS[2], ARGV[2], 3, {text = saved['text'], channel = saved['channel']})
return note
"""
)

# KEYS: the notes, the shard's audit stream; ARGV: audit length, then the audit fields.
# Returns how many notes there were.
CLEAR = (
    AUDIT_LUA
    + """
local count = redis.call('HLEN', KEYS[1])
if count == 0 then return 0 end
redis.call('DEL', KEYS[1])
audit(KEYS[2], ARGV[1], 2, {count = count})
return count
"""
)


@dataclass(frozen=True)
class Note:
    id: str  # n1, n2… in its scope
    text: str
    by: str  # who saved it
    at: float
    channel: str  # where it was saved


@dataclass(frozen=True)
class Saved:
    note: Note


@dataclass(frozen=True)
class Duplicate:
    """The call's key was seen: ``note`` is the one saved the first time."""

    note: Note


@dataclass(frozen=True)
class Full:
    """The memory holds ``MAX_NOTES`` notes already: an admin must ``/agent forget`` some."""

    limit: int = MAX_NOTES


@dataclass(frozen=True)
class TooLong:
    chars: int
    limit: int = MAX_NOTE_CHARS


Added = Saved | Full | TooLong | Duplicate


def memory_scope(channel: str, user: str) -> str:
    """Whose memory a conversation uses: a channel's own, or in a DM (an ID starting with
    ``D``, the agent pane's too) the person's, ``user:<U…>``."""
    return f"user:{user}" if channel.startswith("D") else channel


class ChannelMemory:
    def __init__(self, client: Redis, keys: Keys, audit: AuditLog) -> None:
        self.client = client
        self.keys = keys
        self.audit = audit
        self._add = client.register_script(ADD)
        self._remove = client.register_script(REMOVE)
        self._clear = client.register_script(CLEAR)

    async def notes(self, scope: str) -> list[Note]:
        """The scope's notes, newest first."""
        return parse(await self.client.hgetall(self.keys.memory(scope)))

    def notes_in(self, pipe: Any, scope: str) -> None:
        """Queue :meth:`notes`'s command on a pipeline (its reply: :func:`parse`)."""
        pipe.hgetall(self.keys.memory(scope))

    async def add(self, team: str, scope: str, text: str, by: str, channel: str, key: str) -> Added:
        """Save ``text`` as a note of ``scope``, said by ``by`` in ``channel``; ``key``: the
        call's idempotency key (the turn's entry id and the call id), under which it is saved
        once. Audited in the same step."""
        if len(text) > MAX_NOTE_CHARS:
            return TooLong(len(text))
        at = time.time()
        data = json.dumps(
            {"text": text, "by": by, "at": at, "channel": channel}, ensure_ascii=False
        )
        entry = self._entry(team, scope, "remembered", by, at, {"text": text, "channel": channel})
        outcome, value = await self._add(
            keys=[
                self.keys.memory(scope),
                self.keys.memory_sequence(scope),
                self.keys.memory_saved(scope, key),
                self.keys.audit(self.keys.channel_shard(scope)),
            ],
            args=[data, MAX_NOTES, SAVED_KEY_S, self.audit.max_entries, *self.audit.flat(entry)],
        )
        if outcome == "saved":
            return Saved(Note(value, text, by, at, channel))
        if outcome == "duplicate":
            note_id, _, saved = value.partition(" ")
            return Duplicate(_note(note_id, saved))
        return Full()

    async def remove(self, team: str, scope: str, note_id: str, by: str) -> Note | None:
        """Forget one note (None: no such note); audited in the same step."""
        entry = self._entry(team, scope, "forgotten", by, time.time(), {"id": note_id})
        found = await self._remove(
            keys=[self.keys.memory(scope), self.keys.audit(self.keys.channel_shard(scope))],
            args=[note_id, self.audit.max_entries, *self.audit.flat(entry)],
        )
        return _note(note_id, found) if found else None

    async def clear(self, team: str, scope: str, by: str) -> int:
        """Forget every note of ``scope``: how many there were (an entry in the audit when
        any)."""
        entry = self._entry(team, scope, "cleared", by, time.time(), {})
        return int(
            await self._clear(
                keys=[self.keys.memory(scope), self.keys.audit(self.keys.channel_shard(scope))],
                args=[self.audit.max_entries, *self.audit.flat(entry)],
            )
        )

    @staticmethod
    def _entry(
        team: str, scope: str, action: str, by: str, at: float, detail: dict[str, Any]
    ) -> AuditEntry:
        return AuditEntry(
            kind=AuditKind.MEMORY,
            actor=by,
            action=action,
            target=scope,
            detail={**detail, "team": team},
            at=at,
        )


def parse(raw: dict[str, str]) -> list[Note]:
    """A memory's hash as read: its notes, newest first."""
    notes = [_note(note_id, data) for note_id, data in raw.items()]
    return sorted(notes, key=lambda note: _number(note.id), reverse=True)


def _note(note_id: str, data: str) -> Note:
    saved = json.loads(data)
    return Note(note_id, saved["text"], saved["by"], float(saved["at"]), saved["channel"])


def _number(note_id: str) -> int:
    digits = note_id.removeprefix("n")
    return int(digits) if digits.isdigit() else 0
