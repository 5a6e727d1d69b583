"""Schedules (issue 34) in Redis: each schedule's record, the index of people's schedules, the
due index the scheduler reads, and the firing record that lets one replica fire an
occurrence while the others keep off (bot/schedules/firing.py holds the protocol).

Every key is in one shard (``SCHEDULES_SHARD``), so every change is one Lua step: the
schedule, its owner's index, the due index, and the audit entry in that shard's stream.
Ids are ``s1``, ``s2``… and never reused. Times are epoch seconds; a schedule's score in the
due index is its next run, or while an occurrence is claimed the claim's lease's end. What
is due and whose lease is live are read on Redis's clock (``TIME`` in the step), never a
replica's. A schedule that ended (a one-off that ran) leaves the due index and is kept a
week for listing, then expires; the indexes forget it when next read."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.schedules.recurrence import Recurrence
from bot.state.audit import AUDIT_LUA, AuditEntry, AuditKind, AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.errors import guarded
from bot.state.redis.keys import SCHEDULES_SHARD, Keys

State = Literal["active", "paused", "ended"]
STATES: tuple[State, ...] = ("active", "paused", "ended")
ENDED_KEEP_S = 7 * 24 * 3600  # an ended schedule is listed this long, then expires
FIRING_KEEP_S = 24 * 3600  # a firing record expires after a day

# Patches the audit entry's target (the fields from ARGV[from] on) to ``target``: an id the
# step itself gave.
RETARGET_LUA = """
local function retarget(from, target)
  for i = from, #ARGV, 2 do
    if ARGV[i] == 'target' then ARGV[i + 1] = target end
  end
end
"""

# KEYS: the sequence, the owner's index, every schedule's index, the due index, the audit
# stream. ARGV: the schedules' key prefix, the new schedule's fields (JSON, no id), its next
# run, the most an owner may have, audit length, then the audit fields. Owners' schedules
# that ended and expired leave the indexes here. Returns the new id, or false: too many.
CREATE = (
    AUDIT_LUA
    + RETARGET_LUA
    + """
local count = 0
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local state = redis.call('HGET', ARGV[1] .. id, 'state')
  if not state then
    redis.call('SREM', KEYS[2], id)
    redis.call('SREM', KEYS[3], id)
  elseif state ~= 'ended' then
    count = count + 1
  end
end
if count >= tonumber(ARGV[4]) then return false end
local id = 's' .. redis.call('INCR', KEYS[1])
local flat = {'id', id}
for name, value in pairs(cjson.decode(ARGV[2])) do
  flat[#flat + 1] = name
  flat[#flat + 1] = value
end
redis.call('HSET', ARGV[1] .. id, unpack(flat))
redis.call('SADD', KEYS[2], id)
redis.call('SADD', KEYS[3], id)
redis.call('ZADD', KEYS[4], ARGV[3], id)
retarget(6, id)
audit(KEYS[5], ARGV[5], 6, {schedule = id})
return id
"""
)

# KEYS: an index (a set of ids); ARGV: the schedules' key prefix. Each schedule's fields; ids
# whose schedule expired leave the index.
LIST = """
local found = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local fields = redis.call('HGETALL', ARGV[1] .. id)
  if #fields == 0 then
    redis.call('SREM', KEYS[1], id)
  else
    found[#found + 1] = fields
  end
end
return found
"""

# The audit detail every change of a schedule carries: whose it is, and where.
ABOUT_LUA = """
local function about(key, extra)
  local found = redis.call('HMGET', key, 'team', 'owner', 'channel')
  extra['team'] = found[1]
  extra['owner'] = found[2]
  extra['channel'] = found[3]
  return extra
end
"""

# KEYS: the schedule, the due index, the audit stream; ARGV: id, reason, audit length, then
# the audit fields. An active schedule is paused (audited); any other is left as it is.
# Returns its fields (empty: no such schedule).
PAUSE = (
    AUDIT_LUA
    + ABOUT_LUA
    + """
if redis.call('HGET', KEYS[1], 'state') == 'active' then
  redis.call('HSET', KEYS[1], 'state', 'paused', 'reason', ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  audit(KEYS[3], ARGV[3], 4, about(KEYS[1], {reason = ARGV[2]}))
end
return redis.call('HGETALL', KEYS[1])
"""
)

# KEYS: the schedule, the due index, the audit stream; ARGV: id, next run, audit length, then
# the audit fields. A paused schedule is active again from its next run (audited); any other
# is left as it is. Returns its fields (empty: no such schedule).
RESUME = (
    AUDIT_LUA
    + ABOUT_LUA
    + """
if redis.call('HGET', KEYS[1], 'state') == 'paused' then
  redis.call('HSET', KEYS[1], 'state', 'active', 'reason', '', 'next_at', ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  audit(KEYS[3], ARGV[3], 4, about(KEYS[1], {next_at = ARGV[2]}))
end
return redis.call('HGETALL', KEYS[1])
"""
)

# KEYS: the schedule, every schedule's index, the due index, the audit stream; ARGV: id, the
# owners' index prefix, audit length, then the audit fields. Returns the fields the schedule
# had (empty: no such schedule).
REMOVE = (
    AUDIT_LUA
    + ABOUT_LUA
    + """
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return fields end
local detail = about(KEYS[1], {prompt = redis.call('HGET', KEYS[1], 'prompt')})
redis.call('DEL', KEYS[1])
redis.call('SREM', ARGV[2] .. detail['team'] .. ':' .. detail['owner'], ARGV[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
audit(KEYS[4], ARGV[3], 4, detail)
return fields
"""
)

# The store's clock: Redis's own (TIME) plus an offset (ARGV), so every replica reads one
# clock whatever its own says. (Redis 7 replicates a script's effects, so a script may read
# TIME and then write.)
SERVER_NOW_LUA = """
local function server_now(offset)
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(offset)
end
"""

# KEYS: the schedule, the occurrence's firing record, the due index; ARGV: the occurrence,
# holder, the lease's length, the record's lifetime, the schedule's id, the clock's offset.
# By Redis's clock: the schedule must be active with its next run at the occurrence, due,
# and no other holder's lease live. The record counts the attempt; the schedule's score in
# the due index becomes the lease's end, so the schedulers' next looks pass over it until
# the lease lapses (no head-of-line blocking by an occurrence being fired or waiting to be
# tried again). Returns {headline ts or '', first claimed at, '1' when a holder had it
# before ('0' else), the attempts so far (this one included), now, the lease's end, the
# schedule's fields}, or false.
CLAIM = (
    SERVER_NOW_LUA
    + """
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'active' then return false end
local next_at = redis.call('HGET', KEYS[1], 'next_at')
if not next_at or next_at == '' or tonumber(next_at) ~= tonumber(ARGV[1]) then return false end
local now = server_now(ARGV[6])
if tonumber(next_at) > now then return false end
local held = redis.call('HMGET', KEYS[2], 'holder', 'until', 'ts', 'first')
if held[1] and tonumber(held[2]) > now then return false end
local first = held[4] or string.format('%.6f', now)
local lease_end = string.format('%.6f', now + tonumber(ARGV[3]))
redis.call('HSET', KEYS[2], 'holder', ARGV[2], 'until', lease_end, 'first', first)
local attempts = redis.call('HINCRBY', KEYS[2], 'attempts', 1)
redis.call('EXPIRE', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], lease_end, ARGV[5])
return {held[3] or '', first, held[1] and '1' or '0', attempts, string.format('%.6f', now),
  lease_end, redis.call('HGETALL', KEYS[1])}
"""
)

# Whether ``holder`` holds the firing record ``key`` now: named in it, its lease live.
HOLDS_LUA = """
local function holds(key, holder, offset)
  local held = redis.call('HMGET', key, 'holder', 'until')
  return held[1] == holder and tonumber(held[2]) > server_now(offset)
end
"""

# KEYS: the firing record; ARGV: holder, headline ts, the clock's offset, the moment the
# run was decided from (it becomes the record's first claim: every later holder decides
# from it). 1: recorded; 0: not the holder (another took it over, or its lease lapsed).
RECORD_HEADLINE = (
    SERVER_NOW_LUA
    + HOLDS_LUA
    + """
if not holds(KEYS[1], ARGV[1], ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'ts', ARGV[2], 'first', ARGV[4])
return 1
"""
)

# KEYS: the schedule, the firing record, the due index, the audit stream. ARGV: id, the
# occurrence, holder, next run ('' for none: the schedule ends), the run ('' for none),
# missed, outcome, how long an ended schedule is kept, audit this step (1/0), the clock's
# offset, audit length, then the audit fields. Only while the schedule's next run is the
# occurrence and the holder holds the record (its lease live). A run whose turn already
# ended keeps its outcome (last_at the run, last_outcome other than 'queued'). 1: advanced;
# 0: not.
ADVANCE = (
    AUDIT_LUA
    + ABOUT_LUA
    + SERVER_NOW_LUA
    + HOLDS_LUA
    + """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 0 end
local next_at = redis.call('HGET', KEYS[1], 'next_at')
if not next_at or next_at == '' or tonumber(next_at) ~= tonumber(ARGV[2]) then return 0 end
if not holds(KEYS[2], ARGV[3], ARGV[10]) then return 0 end
local last = redis.call('HMGET', KEYS[1], 'last_at', 'last_outcome')
local ended = ARGV[5] ~= '' and last[1] and last[1] ~= '' and tonumber(last[1]) == tonumber(ARGV[5])
  and last[2] and last[2] ~= '' and last[2] ~= 'queued'
redis.call('HSET', KEYS[1], 'missed', ARGV[6])
if not ended then redis.call('HSET', KEYS[1], 'last_outcome', ARGV[7]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'last_at', ARGV[5]) end
if ARGV[4] == '' then
  redis.call('HSET', KEYS[1], 'state', 'ended', 'next_at', '', 'reason', '')
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[8])
else
  redis.call('HSET', KEYS[1], 'next_at', ARGV[4])
  if state == 'active' then redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1]) end
end
if ARGV[9] == '1' then audit(KEYS[4], ARGV[11], 12, about(KEYS[1], {})) end
return 1
"""
)

# KEYS: the due index; ARGV: the schedules' key prefix, the most to return, the clock's
# offset. Redis's clock (TIME: seconds, microseconds), and the schedules whose score (their
# next run, or the end of a claim's lease) is at or before it with the offset, earliest
# first, each with its next run; and how many are active. Returns {seconds, microseconds,
# {id, next run, ...}, count}.
LOOK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[3])
local due = {}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now), 'LIMIT', 0,
  ARGV[2])
for _, id in ipairs(ids) do
  local next_at = redis.call('HGET', ARGV[1] .. id, 'next_at')
  if next_at and next_at ~= '' then
    due[#due + 1] = id
    due[#due + 1] = next_at
  end
end
local after = redis.call('ZRANGEBYSCORE', KEYS[1], string.format('(%.6f', now), '+inf',
  'WITHSCORES', 'LIMIT', 0, 1)
return {t[1], t[2], due, redis.call('ZCARD', KEYS[1]), after[2] or ''}
"""

# KEYS: the schedule; ARGV: the run, its outcome. Only while the run is the schedule's last.
RECORD_OUTCOME = """
local last_at = redis.call('HGET', KEYS[1], 'last_at')
if last_at and last_at ~= '' and tonumber(last_at) == tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'last_outcome', ARGV[2])
end
return 1
"""


@dataclass(frozen=True)
class Schedule:
    id: str
    team: str
    owner: str
    channel: str
    prompt: str
    recurrence: Recurrence
    state: State
    reason: str  # why paused ("" / "paused by <@U…>" / "owner left the workspace")
    created_at: float
    next_at: float | None
    last_at: float | None
    last_outcome: str  # "" before the first run; queued, then the turn's end; skipped
    missed: int  # runs missed since the last one that ran, for the next run's message


@dataclass(frozen=True)
class TooMany:
    """The owner has ``limit`` schedules already (active or paused)."""

    limit: int


@dataclass(frozen=True)
class Firing:
    """One occurrence claimed by ``holder`` until ``until``; ``ts``: its headline's, once a
    holder recorded it; ``first_claimed_at``: when the occurrence was first claimed (every
    later holder decides what to run from that moment, so all decide alike);
    ``taken_over``: another holder had it before (and may have posted its headline)."""

    schedule: Schedule
    occurrence: float
    holder: str
    until: float
    ts: str
    first_claimed_at: float
    taken_over: bool
    attempts: int  # claims of this occurrence so far, this one included
    claimed_at: float  # the store's clock (Redis's) when this claim was made


@dataclass(frozen=True)
class DueLook:
    """One look at the due index: the schedules due (id, their next run: the occurrence to
    fire), how many are active, and the store's clock (Redis's) they were due by."""

    due: list[tuple[str, float]]
    active: int
    now: float
    next_due: float | None = None  # the earliest score after ``now``: when to look again


def epoch_text(moment: float) -> str:
    """Epoch seconds as a key names them: whole seconds bare, else to the microsecond."""
    return str(int(moment)) if moment == int(moment) else f"{moment:.6f}".rstrip("0")


class ScheduleStore:
    """Schedules in Redis. Whether an occurrence is due and whose claim is live are read on
    Redis's clock (``TIME``) plus ``clock_offset_s`` (0 in the app; tests and benchmarks
    set it to stand at a moment of their choosing), never on a replica's own."""

    def __init__(self, client: Redis, keys: Keys, audit: AuditLog) -> None:
        self.client = client
        self.keys = keys
        self.audit = audit
        self.clock_offset_s = 0.0
        self._create = client.register_script(CREATE)
        self._list = client.register_script(LIST)
        self._pause = client.register_script(PAUSE)
        self._resume = client.register_script(RESUME)
        self._remove = client.register_script(REMOVE)
        self._claim = client.register_script(CLAIM)
        self._record_headline = client.register_script(RECORD_HEADLINE)
        self._advance = client.register_script(ADVANCE)
        self._record_outcome = client.register_script(RECORD_OUTCOME)
        self._look = client.register_script(LOOK)

    # --- made and changed by people --------------------------------------------------

    async def create(
        self,
        *,
        team: str,
        owner: str,
        channel: str,
        prompt: str,
        recurrence: Recurrence,
        next_at: float,
        max_per_person: int,
        by: str,
    ) -> Schedule | TooMany:
        """A new active schedule, due at ``next_at``; refused when ``owner`` has
        ``max_per_person`` schedules already (counted in the same step). Audited."""
        created_at = time.time()
        fields = {
            "team": team,
            "owner": owner,
            "channel": channel,
            "prompt": prompt,
            "recurrence": recurrence.to_json(),
            "state": "active",
            "reason": "",
            "created_at": repr(created_at),
            "next_at": repr(next_at),
            "last_at": "",
            "last_outcome": "",
            "missed": "0",
        }
        detail = {"team": team, "owner": owner, "channel": channel, "prompt": prompt}
        detail["recurrence"] = recurrence.to_json()
        entry = self._entry("created", by, "", detail)
        schedule_id = await guarded(
            self._create(
                keys=[
                    self.keys.schedules_sequence(),
                    self.keys.schedules_of_owner(team, owner),
                    self.keys.schedules_all(),
                    self.keys.schedules_due(),
                    self._audit_stream(),
                ],
                args=[
                    self.keys.schedule_prefix(),
                    json.dumps(fields, ensure_ascii=False),
                    repr(next_at),
                    max_per_person,
                    self.audit.max_entries,
                    *self.audit.flat(entry),
                ],
            )
        )
        if not schedule_id:
            return TooMany(max_per_person)
        return parse({**fields, "id": str(schedule_id)})

    async def pause(
        self, schedule_id: str, by: str, reason: str, *, action: str = "paused"
    ) -> Schedule | None:
        """Pause an active schedule (audited as ``action``: ``owner_gone`` when its owner
        left); one in another state is returned as it is. None: no such schedule."""
        entry = self._entry(action, by, schedule_id, {})
        fields = await guarded(
            self._pause(
                keys=[
                    self.keys.schedule(schedule_id),
                    self.keys.schedules_due(),
                    self._audit_stream(),
                ],
                args=[schedule_id, reason, self.audit.max_entries, *self.audit.flat(entry)],
            )
        )
        return parse_flat(fields)

    async def resume(self, schedule_id: str, by: str, next_at: float) -> Schedule | None:
        """A paused schedule active again, next due at ``next_at`` (audited); one in another
        state is returned as it is. None: no such schedule."""
        entry = self._entry("resumed", by, schedule_id, {})
        fields = await guarded(
            self._resume(
                keys=[
                    self.keys.schedule(schedule_id),
                    self.keys.schedules_due(),
                    self._audit_stream(),
                ],
                args=[schedule_id, repr(next_at), self.audit.max_entries, *self.audit.flat(entry)],
            )
        )
        return parse_flat(fields)

    async def remove(self, schedule_id: str, by: str) -> Schedule | None:
        """Delete a schedule (audited): the schedule as it was, or None: no such schedule."""
        entry = self._entry("removed", by, schedule_id, {})
        fields = await guarded(
            self._remove(
                keys=[
                    self.keys.schedule(schedule_id),
                    self.keys.schedules_all(),
                    self.keys.schedules_due(),
                    self._audit_stream(),
                ],
                args=[
                    schedule_id,
                    self.keys.schedules_of_owner_prefix(),
                    self.audit.max_entries,
                    *self.audit.flat(entry),
                ],
            )
        )
        return parse_flat(fields)

    # --- read ------------------------------------------------------------------------

    async def get(self, schedule_id: str) -> Schedule | None:
        return parse_mapping(await guarded(self.client.hgetall(self.keys.schedule(schedule_id))))

    async def of_owner(self, team: str, owner: str) -> list[Schedule]:
        """A person's schedules (ended ones for a week), oldest first."""
        return await self._listed(self.keys.schedules_of_owner(team, owner))

    async def everyone(self, team: str) -> list[Schedule]:
        """Every schedule of the team (ended ones for a week), oldest first."""
        return [s for s in await self._listed(self.keys.schedules_all()) if s.team == team]

    async def due(self, now: float, limit: int) -> list[tuple[str, float]]:
        """Up to ``limit`` active schedules whose next run is at or before ``now``: (id, that
        run), earliest first."""
        reply = await guarded(
            self.client.zrangebyscore(
                self.keys.schedules_due(), "-inf", now, start=0, num=limit, withscores=True
            )
        )
        return [(str(member), float(score)) for member, score in reply]

    async def look(self, limit: int) -> DueLook:
        """The scheduler's tick, one round trip: up to ``limit`` schedules whose score in the
        due index (their next run; while claimed, the claim's lease's end) is at or before
        the store's clock, each with its next run, earliest first; how many are active; and
        that clock; and the earliest score after it (when something is next due)."""
        seconds, micros, due, active, after = await guarded(
            self._look(
                keys=[self.keys.schedules_due()],
                args=[self.keys.schedule_prefix(), limit, repr(self.clock_offset_s)],
            )
        )
        now = int(seconds) + int(micros) / 1e6 + self.clock_offset_s
        pairs = zip(due[::2], due[1::2], strict=True)
        next_due = float(after) if after not in ("", None) else None
        return DueLook(
            [(str(member), float(at)) for member, at in pairs], int(active), now, next_due
        )

    async def count_active(self) -> int:
        return int(await guarded(self.client.zcard(self.keys.schedules_due())))

    # --- firing (bot/schedules/firing.py) ---------------------------------------------

    async def claim(
        self, schedule_id: str, occurrence: float, holder: str, lease_s: float
    ) -> Firing | None:
        """Take the firing of ``occurrence`` for ``lease_s`` of the store's clock: only
        while the schedule is active with its next run at ``occurrence``, due by that clock,
        and no other holder's lease is live. The attempt is counted, and the schedule leaves
        the due window until the lease's end. None: not due yet, someone else holds it, or
        the schedule moved on."""
        reply = await guarded(
            self._claim(
                keys=[
                    self.keys.schedule(schedule_id),
                    self.keys.schedule_firing(schedule_id, epoch_text(occurrence)),
                    self.keys.schedules_due(),
                ],
                args=[
                    repr(occurrence),
                    holder,
                    repr(lease_s),
                    FIRING_KEEP_S,
                    schedule_id,
                    repr(self.clock_offset_s),
                ],
            )
        )
        if not reply:
            return None
        ts, first, before, attempts, now, until, fields = reply
        schedule = parse_flat(fields)
        if schedule is None:
            return None
        return Firing(
            schedule=schedule,
            occurrence=occurrence,
            holder=holder,
            until=float(until),
            ts=str(ts),
            first_claimed_at=float(first),
            taken_over=before == "1",
            attempts=int(attempts),
            claimed_at=float(now),
        )

    async def record_headline(self, firing: Firing, ts: str, decided_at: float) -> bool:
        """Keep the headline's ts in the firing record, with the moment its run was decided
        from (the first claim's, or a later one's when that had gone stale), while
        ``firing.holder`` holds it (False: its lease lapsed, or another holder took it
        over)."""
        recorded = await guarded(
            self._record_headline(
                keys=[self._firing_key(firing)],
                args=[firing.holder, ts, repr(self.clock_offset_s), repr(decided_at)],
            )
        )
        return bool(recorded)

    async def advance(
        self,
        firing: Firing,
        *,
        ran: float | None,
        next_at: float | None,
        missed: int,
        outcome: str,
    ) -> bool:
        """Move the schedule past the occurrence: ``ran`` (the run made, None: none),
        ``next_at`` (None: the schedule ends), ``missed`` (carried to the next run's
        message), ``outcome`` (not over the real outcome of ``ran``'s turn, when it already
        ended). A step with no run is audited (``skipped``, with its outcome).
        Only while the schedule's next run is the occurrence and ``firing.holder`` holds the
        firing record (its lease live)."""
        schedule = firing.schedule
        detail = {"missed": missed, "outcome": outcome}
        entry = self._entry("skipped", schedule.owner, schedule.id, detail)
        advanced = await guarded(
            self._advance(
                keys=[
                    self.keys.schedule(schedule.id),
                    self._firing_key(firing),
                    self.keys.schedules_due(),
                    self._audit_stream(),
                ],
                args=[
                    schedule.id,
                    repr(firing.occurrence),
                    firing.holder,
                    "" if next_at is None else repr(next_at),
                    "" if ran is None else repr(ran),
                    missed,
                    outcome,
                    ENDED_KEEP_S,
                    "1" if ran is None else "0",
                    repr(self.clock_offset_s),
                    self.audit.max_entries,
                    *self.audit.flat(entry),
                ],
            )
        )
        return bool(advanced)

    async def record_outcome(self, schedule_id: str, occurrence: float, outcome: str) -> None:
        """The run's turn ended (answered, failed, …): its outcome, while that run is the
        schedule's last."""
        await guarded(
            self._record_outcome(
                keys=[self.keys.schedule(schedule_id)], args=[repr(occurrence), outcome]
            )
        )

    # --- helpers ---------------------------------------------------------------------

    async def _listed(self, index: str) -> list[Schedule]:
        found = await guarded(self._list(keys=[index], args=[self.keys.schedule_prefix()]))
        schedules = [s for s in (parse_flat(fields) for fields in found) if s is not None]
        return sorted(schedules, key=lambda s: _number(s.id))

    def _firing_key(self, firing: Firing) -> str:
        return self.keys.schedule_firing(firing.schedule.id, epoch_text(firing.occurrence))

    def _audit_stream(self) -> str:
        return self.keys.audit(SCHEDULES_SHARD)

    @staticmethod
    def _entry(action: str, by: str, target: str, detail: dict[str, Any]) -> AuditEntry:
        return AuditEntry(
            kind=AuditKind.SCHEDULE, actor=by, action=action, target=target, detail=detail
        )


def parse_flat(fields: Sequence[Any]) -> Schedule | None:
    """A schedule from a script's reply (HGETALL's flat list); None when empty."""
    return parse_mapping(dict(zip(fields[::2], fields[1::2], strict=True)))


def parse_mapping(fields: Mapping[str, Any]) -> Schedule | None:
    return parse(fields) if fields else None


def parse(fields: Mapping[str, Any]) -> Schedule:
    """A schedule from its record's fields."""
    return Schedule(
        id=str(fields["id"]),
        team=str(fields["team"]),
        owner=str(fields["owner"]),
        channel=str(fields["channel"]),
        prompt=str(fields["prompt"]),
        recurrence=Recurrence.from_json(str(fields["recurrence"])),
        state=_state(str(fields["state"])),
        reason=str(fields.get("reason") or ""),
        created_at=float(fields["created_at"]),
        next_at=_moment(fields.get("next_at")),
        last_at=_moment(fields.get("last_at")),
        last_outcome=str(fields.get("last_outcome") or ""),
        missed=int(fields.get("missed") or 0),
    )


def _state(value: str) -> State:
    """A state as stored; one this version does not know reads as paused (never fired)."""
    for state in STATES:
        if value == state:
            return state
    return "paused"


def _moment(value: Any) -> float | None:
    return float(value) if value not in (None, "") else None


def _number(schedule_id: str) -> int:
    digits = schedule_id.removeprefix("s")
    return int(digits) if digits.isdigit() else 0
