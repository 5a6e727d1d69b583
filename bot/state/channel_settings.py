"""A channel's settings as admins set them in Slack (``/agent channel <key> …``), each with who
set it and when, and the index of the channels that have any.

One hash per channel (``keys.channel_settings``: key -> JSON ``{value, by, at}``, ``value``
the setting's JSON text), in the channel's shard, beside that shard's index set and audit
stream: each change, the index and its audit entry (with the value before and after) are
written in one Lua step on one slot, so a change is never without its entry, on a single
Redis or a Cluster alike. Read on every turn (:class:`bot.channels.reader.ChannelReader`),
so a change takes effect on the next turn on every replica."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from bot.state.audit import AUDIT_LUA, AuditEntry, AuditKind, AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys

# The keys a value may be set for in Slack ("servers" in /agent channel stores mcp_servers;
# ``locked`` is the file's alone: Slack cannot unlock).
STORED_KEYS = ("instructions", "tools", "mcp_servers", "budget", "memory")

# KEYS: the channel's hash, the shard's index, the shard's audit stream
# ARGV: key, record JSON, channel, audit length, then the audit entry's fields
# Returns the record it replaced (false: none).
SET = (
    AUDIT_LUA
    + """
local before = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
local was = cjson.null
if before then was = cjson.decode(before)['value'] end
audit(KEYS[3], ARGV[4], 5, {before = was})
return before
"""
)

# KEYS: the channel's hash, the shard's index, the shard's audit stream
# ARGV: JSON list of the keys to reset, channel, audit length, then the audit entry's fields
# (one entry per key removed). Returns the removed keys and their records, flat.
RESET = (
    AUDIT_LUA
    + """
local removed = {}
for _, key in ipairs(cjson.decode(ARGV[1])) do
  local before = redis.call('HGET', KEYS[1], key)
  if before then
    redis.call('HDEL', KEYS[1], key)
    audit(KEYS[3], ARGV[3], 4, {key = key, before = cjson.decode(before)['value']})
    table.insert(removed, key)
    table.insert(removed, before)
  end
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[2])
end
return removed
"""
)


@dataclass(frozen=True)
class Override:
    """A value set in Slack for one of a channel's keys (``STORED_KEYS``): as JSON holds it
    (a string, a list of strings, a budget's mapping, a bool)."""

    key: str
    value: Any
    by: str
    at: float


class ChannelOverrides:
    def __init__(self, client: Redis, keys: Keys, audit: AuditLog) -> None:
        self.client = client
        self.keys = keys
        self.audit = audit
        self._set = client.register_script(SET)
        self._reset = client.register_script(RESET)

    async def read(self, channel: str) -> dict[str, Override]:
        return parse(await self.client.hgetall(self.keys.channel_settings(channel)))

    def read_in(self, pipe: Any, channel: str) -> None:
        """Queue :meth:`read`'s command on a pipeline (its reply: :func:`parse`)."""
        pipe.hgetall(self.keys.channel_settings(channel))

    async def set(self, team: str, channel: str, key: str, value: Any, by: str) -> Override | None:
        """Set ``key`` (one of ``STORED_KEYS``) to ``value`` (JSON-able; a budget may be a
        ``Budget``) for ``channel``; audited in the same step. Returns the value it replaced."""
        _known(key)
        text = encode(value)
        override = Override(key, json.loads(text), by, time.time())
        record = json.dumps({"value": text, "by": by, "at": override.at})
        entry = self._entry(team, channel, "set", by, override.at, {"key": key, "after": text})
        before = await self._set(
            keys=self._keys(channel),
            args=[key, record, channel, self.audit.max_entries, *self.audit.flat(entry)],
        )
        return _override(key, before) if before else None

    async def reset(self, team: str, channel: str, key: str | None, by: str) -> dict[str, Override]:
        """Remove the value set in Slack for ``key`` (every key: None), so the file's entry
        (or the default) is in force again; one audit entry for each value removed, in the
        same step. Returns the values removed."""
        if key is not None:
            _known(key)
        reset = list(STORED_KEYS) if key is None else [key]
        entry = self._entry(team, channel, "reset", by, time.time(), {"after": None})
        flat = await self._reset(
            keys=self._keys(channel),
            args=[json.dumps(reset), channel, self.audit.max_entries, *self.audit.flat(entry)],
        )
        return {
            name: _override(name, record)
            for name, record in zip(flat[::2], flat[1::2], strict=True)
        }

    async def channels(self) -> list[str]:
        """The channels with any value set in Slack, sorted."""
        async with self.client.pipeline(transaction=False) as pipe:
            for shard in self.keys.shards.all():
                pipe.smembers(self.keys.channels_set_in_slack(shard))
            replies = await pipe.execute()
        return sorted({channel for members in replies for channel in members})

    def _keys(self, channel: str) -> list[str]:
        shard = self.keys.channel_shard(channel)
        return [
            self.keys.channel_settings(channel),
            self.keys.channels_set_in_slack(shard),
            self.keys.audit(shard),
        ]

    @staticmethod
    def _entry(
        team: str, channel: str, action: str, by: str, at: float, detail: dict[str, Any]
    ) -> AuditEntry:
        return AuditEntry(
            kind=AuditKind.CHANNEL,
            actor=by,
            action=action,
            target=channel,
            detail={**detail, "team": team},
            at=at,
        )


def encode(value: Any) -> str:
    """A value's JSON text (a pydantic model, such as a ``Budget``, without its unset keys)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_none=True)
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def parse(raw: dict[str, str]) -> dict[str, Override]:
    """A channel's hash as read: each key's value set in Slack. A key this version does not
    know (written by a newer one) is left out."""
    return {key: _override(key, record) for key, record in raw.items() if key in STORED_KEYS}


def _override(key: str, record: str) -> Override:
    data = json.loads(record)
    return Override(key, json.loads(data["value"]), data["by"], float(data["at"]))


def _known(key: str) -> None:
    if key not in STORED_KEYS:
        raise ValueError(f"{key!r} is not a channel setting ({', '.join(STORED_KEYS)})")
