"""The audit log: a capped stream of who did what, and when: tool calls, admin commands,
approvals, turns given up, refused model calls, feedback, MCP sampling, channel settings
changed in Slack, the notes of channels' memory and schedules."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys

MAX_ENTRIES = 10_000

# A Lua function for a step that writes its audit entry itself: ``audit(stream, maxlen, from,
# extra)`` adds the entry whose fields come flat from ARGV[from] on (``AuditLog.flat``), its
# detail merged with the table ``extra`` (what only the step knows: a note's id, the value
# before a change).
AUDIT_LUA = """
local function audit(stream, maxlen, from, extra)
  local fields = {unpack(ARGV, from)}
  for i = 1, #fields, 2 do
    if fields[i] == 'detail' then
      local detail = cjson.decode(fields[i + 1])
      for name, value in pairs(extra) do detail[name] = value end
      fields[i + 1] = cjson.encode(detail)
    end
  end
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', unpack(fields))
end
"""


class AuditKind(StrEnum):
    """What an entry is about (its ``action`` says what happened)."""

    TOOL = "tool"  # a tool call's run, written with its saved result; action: the tool
    ADMIN = "admin"  # an /agent subcommand; action: the subcommand
    APPROVAL = "approval"  # a call's approval requested, decided or expired
    TURN = "turn"  # a turn given up (dead-lettered)
    BUDGET = "budget"  # a model call refused by a spending limit
    FEEDBACK = "feedback"  # a click on an answer's feedback buttons
    SAMPLING = "sampling"  # an MCP server asked the bot's model
    OUTPUT = "output"  # a turn's tool output opened privately ("Show output"); action: shown
    # a person's sign-in to an MCP server; action: signin_requested, connected,
    # signin_declined, signin_expired, refresh_failed, disconnected, revoke_failed,
    # callback_refused (never a token, code or state in the entry)
    CONNECTION = "connection"
    # a channel's setting changed in Slack; action: set, reset; target: the channel ID;
    # detail: key, before, after (each the value's JSON text, or null), team
    CHANNEL = "channel"
    # a note of a channel's (or a person's) memory; action: remembered, forgotten, cleared;
    # target: the memory's scope; detail: note id, text, channel, team (cleared: count)
    MEMORY = "memory"
    # a schedule (bot/state/schedules.py); action: created, paused, resumed, removed,
    # skipped (its missed runs were too late to run, or a run kept failing), owner_gone
    # (paused: its owner left the workspace), owner_left_channel (paused: its owner is no
    # longer in its private channel), channel_refused (paused: Slack refuses the bot there
    # for good); target: the schedule's id; detail: team, owner, channel, and what changed
    SCHEDULE = "schedule"

    @classmethod
    def _missing_(cls, value: object) -> AuditKind:
        """A kind another version wrote reads as itself (the log is shared by replicas of
        several versions during a rolling deploy)."""
        member = str.__new__(cls, str(value))
        member._name_ = str(value).upper()
        member._value_ = str(value)
        return member


@dataclass(frozen=True)
class AuditEntry:
    kind: AuditKind
    actor: str  # the Slack user who caused it
    action: str  # the tool's name, or the admin command ("disable", "grant", ...)
    target: str = ""  # what it acted on: a tool, a user
    outcome: str = "ok"  # ok, error kind, refused, ...
    detail: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)
    id: str = ""


class AuditLog:
    def __init__(self, client: Redis, keys: Keys, max_entries: int = MAX_ENTRIES) -> None:
        self.client = client
        self.keys = keys
        self.max_entries = max_entries

    def fields(self, entry: AuditEntry) -> dict[str, str]:
        return {
            "kind": entry.kind.value,
            "actor": entry.actor,
            "action": entry.action,
            "target": entry.target,
            "outcome": entry.outcome,
            "detail": json.dumps(entry.detail, ensure_ascii=False, default=str),
            "at": repr(entry.at),
        }

    def flat(self, entry: AuditEntry) -> list[str]:
        """The entry's fields as a script's arguments: name, value, name, value..."""
        return [part for pair in self.fields(entry).items() for part in pair]

    def add_to(self, pipe: Any, entry: AuditEntry, shard: int) -> None:
        """Queue the entry on a pipeline or transaction, in ``shard`` (that of the keys the
        same step writes: readers merge the shards)."""
        pipe.xadd(
            self.keys.audit(shard), self.fields(entry), maxlen=self.max_entries, approximate=True
        )

    async def add(self, entry: AuditEntry) -> str:
        """Write the entry alone (in its actor's shard)."""
        shard = self.keys.shards.of(entry.actor)
        return str(
            await self.client.xadd(
                self.keys.audit(shard),
                self.fields(entry),
                maxlen=self.max_entries,
                approximate=True,
            )
        )

    async def latest(self, count: int = 20) -> list[AuditEntry]:
        """The latest ``count`` entries of every shard, newest first."""
        async with self.client.pipeline(transaction=False) as pipe:
            for shard in self.keys.shards.all():
                pipe.xrevrange(self.keys.audit(shard), count=count)
            replies = await pipe.execute()
        shards = self.keys.shards
        items = [
            (shards.qualify(shard, entry_id), fields)
            for shard, reply in zip(shards.all(), replies, strict=True)
            for entry_id, fields in reply
        ]
        if self.keys.shards.sharded:  # each shard's stream has its own ids: order by time
            items.sort(key=lambda item: float(item[1].get("at") or 0), reverse=True)
        return [
            AuditEntry(
                kind=AuditKind(f["kind"]),
                actor=f["actor"],
                action=f["action"],
                target=f.get("target", ""),
                outcome=f.get("outcome", ""),
                detail=json.loads(f.get("detail") or "{}"),
                at=float(f["at"]),
                id=entry_id,
            )
            for entry_id, f in items[:count]
        ]
