"""Each turn's durable record in Redis, written only by the owner of its thread's lock.

The record is a hash (what it holds: ``turn_record.py``); beside it, the journal (the
running turn's messages, saved one by one) and the set of tool calls already run again
after a crash.

Every write goes through one Lua script that first checks that the thread's lock still holds
the owner's token. A worker that lost its lock (it stalled, Redis dropped it, another worker
took over) is refused with :class:`Stale` and must stop. A move to a state also checks the
move is allowed from the current state, and runs the move's side effects (history, usage,
audit, acknowledging the queue) in the same atomic step. Repeating a move that already
happened (a reply lost to a dropped connection, then retried) is a no-op.

Saving a tool call's result in the journal, and claiming a call for a run again, carry
commands the same way (the call's audit entry): run in the step that saves the result or
makes the claim, only when it does (not when refused, not when a resent step finds it made).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.state.redis.commands import Commands
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication
from bot.state.redis.thread_key import ThreadKey
from bot.turn.states import TurnState, sources
from bot.turn.store.history import APPEND_FUNCTION
from bot.turn.store.queue import HEAD_FUNCTION, Head, QueueLook
from bot.turn.store.turn_record import Message, TurnRecord

KEEP_S = 7 * 24 * 3600  # a record outlives any retry of its turn
FINISHED_KEEP_S = 3600  # a finished turn's bare record, so a repeated last move is a no-op

# KEYS[1] lock, KEYS[2] record, with a look: KEYS[3] thread's current, KEYS[4] thread queue
# ARGV[1] token, ARGV[2] target state ('' keeps it), ARGV[3] allowed states ('' any),
# ARGV[4] record TTL, ARGV[5] JSON object of fields, ARGV[6] JSON list of commands,
# ARGV[7] the records' key prefix for a look at the thread's queue after the move ('' none)
# Returns 'ok', 'already', 'stale' or 'illegal:<state>'; with a look, 'ok' or 'already'
# followed by a line with the thread's next turn and its state (tab apart), or by an empty
# line when none is left: the lock was freed in the same step (bot/turn/store/lease.py).
FENCED = (
    APPEND_FUNCTION
    + HEAD_FUNCTION
    + """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'stale' end
local current = redis.call('HGET', KEYS[2], 'state') or 'queued'
local outcome = 'ok'
if ARGV[3] ~= '' then
  local allowed = false
  for state in string.gmatch(ARGV[3], '%S+') do
    if state == current then allowed = true end
  end
  if not allowed then
    if current ~= ARGV[2] then return 'illegal:' .. current end
    outcome = 'already'
  end
end
if outcome == 'ok' then
  for name, value in pairs(cjson.decode(ARGV[5])) do
    redis.call('HSET', KEYS[2], name, value)
  end
  if ARGV[2] ~= '' then redis.call('HSET', KEYS[2], 'state', ARGV[2]) end
  redis.call('EXPIRE', KEYS[2], ARGV[4])
  for _, command in ipairs(cjson.decode(ARGV[6])) do
    if command[1] == '__history' then
      append_history(command[2], command[3], command[4], tonumber(command[5]),
        tonumber(command[6]), command[7])
    else
      redis.call(unpack(command))
    end
  end
end
if ARGV[7] and ARGV[7] ~= '' then
  local found = head(KEYS[3], KEYS[4], ARGV[7])
  if found then return outcome .. '\\n' .. found[1] .. '\\t' .. found[2] end
  redis.call('DEL', KEYS[1])
  return outcome .. '\\n'
end
return outcome
"""
)

# Start (or resume) work on a turn: count the attempt (once per attempt id, so a command
# resent after a lost reply counts once), mark it running if it was queued, point the
# thread at it, and return the record, the journal, the calls run again and, for a running
# turn, the thread's history (reading it counts as use: its expiry is refreshed).
# KEYS: lock, record, journal, reruns, thread's current, history, history bytes
# ARGV: token, entry id, TTL, attempt, the history's idle TTL ('': do not read it)
BEGIN = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'stale'} end
if redis.call('HGET', KEYS[2], 'attempt') ~= ARGV[4] then
  redis.call('HINCRBY', KEYS[2], 'attempts', 1)
  redis.call('HSET', KEYS[2], 'attempt', ARGV[4])
end
local state = redis.call('HGET', KEYS[2], 'state')
if not state or state == 'queued' then
  redis.call('HSET', KEYS[2], 'state', 'running', 'round', 0)
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[5], ARGV[2])
local history = {}
if ARGV[5] ~= '' and redis.call('HGET', KEYS[2], 'state') == 'running' then
  history = redis.call('LRANGE', KEYS[6], 0, -1)
  redis.call('EXPIRE', KEYS[6], ARGV[5])
  redis.call('EXPIRE', KEYS[7], ARGV[5])
end
return {'ok', redis.call('HGETALL', KEYS[2]), redis.call('LRANGE', KEYS[3], 0, -1),
  redis.call('SMEMBERS', KEYS[4]), history}
"""

# Save messages of the running turn, in one step, with the commands that go with them (a
# call's audit entry). Idempotent: messages already at their place (the reply was lost and
# the command resent) are not appended again, and their commands are not run again.
# KEYS: lock, record, journal
# ARGV: token, the first one's index, TTL, the round, JSON list of commands, messages...
JOURNAL = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'stale' end
local index = tonumber(ARGV[2])
if redis.call('LINDEX', KEYS[3], index) == ARGV[6] then return 'already' end
redis.call('RPUSH', KEYS[3], unpack(ARGV, 6))
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('HSET', KEYS[2], 'round', ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[3])
for _, command in ipairs(cjson.decode(ARGV[5])) do
  redis.call(unpack(command))
end
return 'ok'
"""

# KEYS: lock, reruns; ARGV: token, call id, TTL, JSON list of commands (run only when the
# call is claimed now). 1: claimed now, 0: ran again before.
CLAIM_RERUN = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local added = redis.call('SADD', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
if added == 1 and ARGV[4] then
  for _, command in ipairs(cjson.decode(ARGV[4])) do
    redis.call(unpack(command))
  end
end
return added
"""


@dataclass(frozen=True)
class Looked:
    """What a move's look at the thread's queue found: the next turn, or None when nothing
    was left (the lock was then freed in the same step)."""

    next: Head | None


class Stale(Exception):
    """The thread's lock no longer holds this owner's token: another owner may have the turn."""


class IllegalMove(Exception):
    """A move the state machine does not allow from the turn's current state."""


def _flat_pairs(flat: list[str]) -> dict[str, str]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


class TurnRecords:
    def __init__(
        self,
        client: Redis,
        keys: Keys,
        *,
        keep_s: int = KEEP_S,
        replication: Replication | None = None,
    ) -> None:
        self.client = client
        self.keys = keys
        self.keep_s = keep_s
        # Every step is on a replica before its owner acts on it (replication.py).
        replication = replication or Replication()
        self._fenced = replication.register(client, FENCED)
        self._begin = replication.register(client, BEGIN)
        self._claim = replication.register(client, CLAIM_RERUN)
        self._journal = replication.register(client, JOURNAL)

    def owned(self, entry_id: str, thread: ThreadKey, token: str) -> OwnedTurn:
        """Write access to one turn for the holder of ``token`` on the thread's lock."""
        return OwnedTurn(self, entry_id, thread, token)

    async def read(self, entry_id: str) -> TurnRecord | None:
        """The record as it is (for inspection and tests); None when there is none."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hgetall(self.keys.turn(entry_id))
            pipe.lrange(self.keys.journal(entry_id), 0, -1)
            pipe.smembers(self.keys.reruns(entry_id))
            data, journal, reruns = await pipe.execute()
        return TurnRecord.parse(data, journal, reruns) if data else None

    def finish_commands(self, commands: Commands, entry_id: str) -> None:
        """What a finished turn leaves: a bare record (kept for ``FINISHED_KEEP_S`` by the
        move that finishes it), nothing else."""
        record = self.keys.turn(entry_id)
        commands.special("HDEL", record, "messages", "text", "delivery", "parked")
        commands.delete(self.keys.journal(entry_id), self.keys.reruns(entry_id))


class OwnedTurn:
    """One owner's fenced access to one turn; also the loop's journal."""

    def __init__(self, records: TurnRecords, entry_id: str, thread: ThreadKey, token: str) -> None:
        self.records = records
        self.entry_id = entry_id
        self.thread = thread
        self.token = token
        keys = records.keys
        self._lock = keys.lock(thread)
        self._record = keys.turn(entry_id)
        self._journal = keys.journal(entry_id)
        self._reruns = keys.reruns(entry_id)
        self.attempt = secrets.token_hex(8)  # this owner's attempt at the turn
        self.looked: Looked | None = None  # what the last move's look found
        self._rounds = 0
        self._saved = 0  # messages in the journal
        self._journal_lock = asyncio.Lock()  # one message at a time, each at its index

    async def begin(self, history_ttl_s: int | None = None) -> TurnRecord:
        """Count an attempt and read everything known about the turn (one round trip); with
        ``history_ttl_s``, the thread's history too when the turn runs (its idle TTL)."""
        keys = self.records.keys
        reply = await self.records._begin(
            keys=[
                self._lock,
                self._record,
                self._journal,
                self._reruns,
                keys.thread_current(self.thread),
                keys.history(self.thread),
                keys.history_bytes(self.thread),
            ],
            args=[
                self.token,
                self.entry_id,
                self.records.keep_s,
                self.attempt,
                "" if history_ttl_s is None else history_ttl_s,
            ],
        )
        if reply[0] == "stale":
            raise Stale(self._lock)
        record = TurnRecord.parse(_flat_pairs(reply[1]), reply[2], reply[3])
        if history_ttl_s is not None and record.state is TurnState.RUNNING:
            record = replace(record, history=list(reply[4]))
        self._rounds = sum(1 for m in record.journal if m.get("role") == "assistant")
        self._saved = len(record.journal)
        return record

    async def move(
        self,
        target: TurnState,
        fields: Mapping[str, Any] | None = None,
        commands: Commands | None = None,
        *,
        keep_s: int | None = None,
        look: QueueLook | None = None,
    ) -> bool:
        """Move the turn to ``target`` with its side effects, atomically. False when it was
        there already (the move had happened; nothing was done again). With ``look`` (the
        turn's last move), look at the thread's queue in the same step: :attr:`looked`
        holds what comes next, and when nothing does the lock is freed."""
        allowed = " ".join(sorted(sources(target)))
        return await self._run(target.value, allowed, fields, commands, keep_s, look)

    async def save(self, **fields: Any) -> None:
        """Update fields of the record without moving it (the delivery record, a time)."""
        await self._run("", "", fields, None, None, None)

    async def _run(
        self,
        target: str,
        allowed: str,
        fields: Mapping[str, Any] | None,
        commands: Commands | None,
        keep_s: int | None,
        look: QueueLook | None,
    ) -> bool:
        encoded = {
            name: value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            for name, value in (fields or {}).items()
        }
        keys = [self._lock, self._record]
        if look is not None:
            keys += [look.current, look.queue]
        reply = str(
            await self.records._fenced(
                keys=keys,
                args=[
                    self.token,
                    target,
                    allowed,
                    keep_s or self.records.keep_s,
                    json.dumps(encoded, separators=(",", ":"), ensure_ascii=False),
                    json.dumps(commands.items if commands else [], ensure_ascii=False),
                    look.records if look is not None else "",
                ],
            )
        )
        if reply == "stale":
            raise Stale(self._lock)
        if reply.startswith("illegal:"):
            raise IllegalMove(f"turn {self.entry_id}: {reply[8:]} -> {target}")
        outcome, _, after = reply.partition("\n")
        if look is not None:
            next_turn, _, state = after.partition("\t")
            self.looked = Looked((next_turn, state) if after else None)
        return outcome == "ok"

    # --- the journal (bot.agent.journal.Journal) ----------------------------------------

    @property
    def journaled(self) -> int:
        """How many messages the journal holds."""
        return self._saved

    async def record(self, *messages: Message, commands: Commands | None = None) -> None:
        """Append ``messages`` to the journal, in one step; ``commands`` (keys of the
        thread's shard) run in that step, once, and only if it saves them."""
        encoded = [json.dumps(m, separators=(",", ":"), ensure_ascii=False) for m in messages]
        with_them = json.dumps(commands.items if commands else [], ensure_ascii=False)
        async with self._journal_lock:
            rounds = self._rounds + sum(1 for m in messages if m.get("role") == "assistant")
            reply = await self.records._journal(
                keys=[self._lock, self._record, self._journal],
                args=[self.token, self._saved, self.records.keep_s, rounds, with_them, *encoded],
            )
            if reply == "stale":
                raise Stale(self._lock)
            self._saved += len(messages)
            self._rounds = rounds

    async def claim_rerun(self, call_id: str, commands: Commands | None = None) -> bool:
        """Claim the call for its one run again (False: it had that run already);
        ``commands`` run in the same step, only when it is claimed now."""
        with_them = json.dumps(commands.items if commands else [], ensure_ascii=False)
        claimed = await self.records._claim(
            keys=[self._lock, self._reruns],
            args=[self.token, call_id, self.records.keep_s, with_them],
        )
        if int(claimed) < 0:
            raise Stale(self._lock)
        return bool(int(claimed))
