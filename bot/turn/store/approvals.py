"""Calls waiting for a person's approval, in Redis: asked once per call, decided once.

A request is opened the first time a parked turn's call needs approval (one per turn and
call, whoever asks again). It is decided once, by whichever replica gets the click, in one
Lua step that only acts while the request is open and before its deadline, and that wakes
the parked turn: its queue entry is marked long idle, so the next worker that looks for
idle entries claims it (within a couple of seconds) and the turn resumes there. A request
past its deadline expires in one step too, by whoever looks first.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.state.audit import AuditEntry, AuditKind
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication
from bot.turn.model import QueuedTurn

KEEP_S = 8 * 24 * 3600  # the longest a request is kept (approval.timeout_s: 7 days at most)
# How long a request (its arguments with it) is kept after its deadline, decided or not: the
# resumed turn reads its decision at once, a late click is told it was decided, the card is
# rewritten from it; the audit log keeps the decision without the arguments.
AFTER_DEADLINE_S = 3600
WOKEN_IDLE_MS = 10**12  # a woken turn's entry looks idle for ages: claimed at the next look
WAKER = "approvals"  # the consumer name a woken entry is claimed to


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    entry: str  # the turn's entry id
    call_id: str
    tool: str
    arguments: str  # as the model wrote them (JSON text)
    team: str
    channel: str
    thread_ts: str
    message_ts: str
    user: str  # who asked for the turn
    created: float
    deadline: float
    state: ApprovalState = ApprovalState.PENDING
    by: str = ""  # who decided
    at: float = 0.0  # when
    reason: str = ""  # why it was denied (optional)
    card_ts: str = ""  # the approval card showing it
    uses: int = 0  # runs started after it was approved

    @property
    def open(self) -> bool:
        return self.state is ApprovalState.PENDING

    @property
    def due(self) -> bool:
        """Open past its deadline: it expires at the next look."""
        return self.open and self.deadline <= time.time()

    @classmethod
    def parse(cls, data: dict[str, str]) -> ApprovalRequest:
        return cls(
            id=data["id"],
            entry=data["entry"],
            call_id=data["call_id"],
            tool=data["tool"],
            arguments=data.get("arguments", ""),
            team=data.get("team", ""),
            channel=data.get("channel", ""),
            thread_ts=data.get("thread_ts", ""),
            message_ts=data.get("message_ts", ""),
            user=data.get("user", ""),
            created=float(data.get("created") or 0),
            deadline=float(data.get("deadline") or 0),
            state=ApprovalState(data.get("state", ApprovalState.PENDING)),
            by=data.get("by", ""),
            at=float(data.get("at") or 0),
            reason=data.get("reason", ""),
            card_ts=data.get("card_ts", ""),
            uses=int(data.get("uses") or 0),
        )


# KEYS: the turn's map, the new request's hash; ARGV: call id, request id, fields (JSON), TTL
# Returns the request's id (the existing one when the call asked before) and 1 when new.
OPEN = """
local existing = redis.call('HGET', KEYS[1], ARGV[1])
if existing then return {existing, 0} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
for name, value in pairs(cjson.decode(ARGV[3])) do
  redis.call('HSET', KEYS[2], name, value)
end
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {ARGV[2], 1}
"""

# KEYS: the request, its turn's stream; ARGV: state, by, reason, now, group, idle ms
# Decides an open request before its deadline (else expires it) and wakes its turn.
# Returns the request's state after the step, and 1 when this step decided it.
DECIDE = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'', 0} end
if state ~= 'pending' then return {state, 0} end
local now = tonumber(ARGV[4])
local result = ARGV[1]
if tonumber(redis.call('HGET', KEYS[1], 'deadline')) <= now then
  result = 'expired'
  redis.call('HSET', KEYS[1], 'state', 'expired', 'at', ARGV[4])
else
  redis.call('HSET', KEYS[1], 'state', ARGV[1], 'by', ARGV[2], 'reason', ARGV[3], 'at', ARGV[4])
end
local entry = string.match(redis.call('HGET', KEYS[1], 'entry'), '[^/]*$')
redis.pcall('XCLAIM', KEYS[2], ARGV[5], 'approvals', 0, entry, 'IDLE', ARGV[6], 'JUSTID')
return {result, result == ARGV[1] and 1 or 0}
"""

# KEYS: the requests; ARGV: now. Expires those open past their deadline; returns their ids.
EXPIRE = """
local expired = {}
for _, key in ipairs(KEYS) do
  if redis.call('HGET', key, 'state') == 'pending'
      and tonumber(redis.call('HGET', key, 'deadline')) <= tonumber(ARGV[1]) then
    redis.call('HSET', key, 'state', 'expired', 'at', ARGV[1])
    table.insert(expired, redis.call('HGET', key, 'id'))
  end
end
return expired
"""

# KEYS: the turn's map, the request; ARGV: call id, request id
# Takes back a request nobody was shown (the person has too many open): 1 when withdrawn.
WITHDRAW = """
if redis.call('HGET', KEYS[2], 'state') ~= 'pending' then return 0 end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end
redis.call('DEL', KEYS[2])
return 1
"""


class Approvals:
    def __init__(self, client: Redis, keys: Keys, replication: Replication | None = None) -> None:
        self.client = client
        self.keys = keys
        # Opened before its card shows, decided before the click is answered: on a replica.
        replication = replication or Replication()
        self._open = replication.register(client, OPEN)
        self._decide = replication.register(client, DECIDE)
        self._expire = replication.register(client, EXPIRE)
        self._withdraw = replication.register(client, WITHDRAW)

    async def open(
        self,
        queued: QueuedTurn,
        call_id: str,
        tool: str,
        arguments: str,
        timeout_s: float,
    ) -> tuple[ApprovalRequest, bool]:
        """The request for this call, opened now (True) or earlier (False)."""
        turn, entry_id = queued.turn, queued.entry_id
        now = time.time()
        shards = self.keys.shards
        request_id = shards.qualify(shards.of_id(entry_id), secrets.token_hex(8))
        fields = {
            "id": request_id,
            "entry": entry_id,
            "call_id": call_id,
            "tool": tool,
            "arguments": arguments,
            "team": turn.team,
            "channel": turn.channel,
            "thread_ts": turn.thread_ts,
            "message_ts": turn.message_ts,
            "user": turn.user,
            "created": repr(now),
            "deadline": repr(now + timeout_s),
            "state": ApprovalState.PENDING.value,
        }
        found, new = await self._open(
            keys=[self.keys.turn_approvals(entry_id), self.keys.approval(request_id)],
            args=[call_id, request_id, json.dumps(fields), kept_for_s(timeout_s)],
        )
        request = await self.get(str(found))
        if request is None:  # opened earlier and gone since (expired keys): open again
            raise LookupError(f"approval request {found} of turn {entry_id} is gone")
        return request, bool(int(new))

    async def get(self, request_id: str) -> ApprovalRequest | None:
        data = await self.client.hgetall(self.keys.approval(request_id))
        return ApprovalRequest.parse(data) if data else None

    async def of_turn(
        self, entry_id: str, call_ids: Iterable[str] | None = None
    ) -> list[ApprovalRequest]:
        """The turn's requests (only those of ``call_ids`` when given), oldest first."""
        ids: dict[str, str] = await self.client.hgetall(self.keys.turn_approvals(entry_id))
        wanted = set(call_ids) if call_ids is not None else None
        chosen = [rid for cid, rid in ids.items() if wanted is None or cid in wanted]
        if not chosen:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for request_id in chosen:
                pipe.hgetall(self.keys.approval(request_id))
            found = await pipe.execute()
        requests = [ApprovalRequest.parse(data) for data in found if data]
        return sorted(requests, key=lambda r: (r.created, r.id))

    async def decide(
        self, request_id: str, approved: bool, by: str, reason: str = ""
    ) -> tuple[ApprovalState | None, bool]:
        """Decide an open request and wake its turn. Returns the request's state after the
        step (None: no such request) and whether this call decided it (a second click, or a
        click after the deadline, decides nothing)."""
        state, decided = await self._decide(
            keys=[
                self.keys.approval(request_id),
                self.keys.turns(self.keys.shards.of_id(request_id)),
            ],
            args=[
                (ApprovalState.APPROVED if approved else ApprovalState.DENIED).value,
                by,
                reason,
                repr(time.time()),
                self.keys.workers,
                WOKEN_IDLE_MS,
            ],
        )
        return (ApprovalState(state) if state else None), bool(int(decided))

    async def expire_due(self, requests: Iterable[ApprovalRequest]) -> list[str]:
        """Expire those still open past their deadline; the ids of those expired now."""
        keys = [self.keys.approval(r.id) for r in requests if r.open]
        if not keys:
            return []
        return [str(i) for i in await self._expire(keys=keys, args=[repr(time.time())])]

    async def use(self, request_id: str) -> int:
        """Count a run of an approved call; the count so far (1: its first run)."""
        return int(await self.client.hincrby(self.keys.approval(request_id), "uses", 1))

    async def show_on(self, request_ids: Iterable[str], card_ts: str) -> None:
        """The card that shows these requests."""
        async with self.client.pipeline(transaction=True) as pipe:
            for request_id in request_ids:
                pipe.hset(self.keys.approval(request_id), "card_ts", card_ts)
            await pipe.execute()

    async def open_among(self, request_ids: Iterable[str]) -> set[str]:
        """Those of ``request_ids`` still open (undecided, whether due or not)."""
        ids = list(request_ids)
        if not ids:
            return set()
        async with self.client.pipeline(transaction=False) as pipe:
            for request_id in ids:
                pipe.hget(self.keys.approval(request_id), "state")
            states = await pipe.execute()
        return {rid for rid, state in zip(ids, states, strict=True) if state == "pending"}

    async def withdraw(self, request: ApprovalRequest) -> bool:
        """Take back an open request no card shows (its call is refused instead): gone, and
        the call no longer names it. False when it was decided meanwhile."""
        withdrawn = await self._withdraw(
            keys=[self.keys.turn_approvals(request.entry), self.keys.approval(request.id)],
            args=[request.call_id, request.id],
        )
        return bool(int(withdrawn))


def kept_for_s(timeout_s: float) -> int:
    """How long a request opened with ``timeout_s`` is kept: past its deadline by
    :data:`AFTER_DEADLINE_S`, never longer than :data:`KEEP_S` (pure)."""
    return min(math.ceil(timeout_s) + AFTER_DEADLINE_S, KEEP_S)


def decided_any(requests: Iterable[ApprovalRequest]) -> bool:
    """Whether a parked turn has something to go on with: a request no longer open."""
    return any(not r.open for r in requests)


def as_fields(request: ApprovalRequest) -> dict[str, Any]:
    """For logs and audit entries: the request without its arguments."""
    return {"tool": request.tool, "call": request.call_id, "turn": request.entry}


def audited(
    request: ApprovalRequest, action: str, outcome: str, actor: str = "", **extra: str
) -> AuditEntry:
    """The audit entry of what happened to ``request`` (requested, approved, denied,
    expired), by ``actor`` (the person who asked, unless another is named)."""
    return AuditEntry(
        kind=AuditKind.APPROVAL,
        actor=actor or request.user,
        action=action,
        target=request.tool,
        outcome=outcome,
        detail={
            **as_fields(request),
            **extra,
            "channel": request.channel,
            "thread": request.thread_ts,
        },
    )
