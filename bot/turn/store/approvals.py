"""Calls waiting for a person's approval, in Redis: asked once per call, decided once.

A request is opened the first time a parked turn's call needs approval (one per turn and
call, whoever asks again). It is decided once, by whichever replica gets the click, in one
Lua step that only acts while the request is open and before its deadline, and that wakes
the parked turn: its queue entry is marked long idle, so the next worker that looks for
idle entries claims it (within a couple of seconds) and the turn resumes there. A request
past its deadline expires in one step too, by whoever looks first: every worker looks about
once a second in each shard's deadline index (a sorted set the opening step writes;
:meth:`Approvals.expire_overdue` expires, audits and wakes in one step, and the worker takes
the woken turns at once), and a turn that resumes looks at its own requests.

A request keeps what the card shows of its tool beside the call (its one-line description,
its source, whether it was marked destructive, what the tool says of the call: its preview),
and whether the card mentions its requester (a scheduled run's call: its owner is not
watching the thread); requests stored before those were kept are shown without them.

Two kinds of request share the store: a call's approval (``kind`` "approval") and a person's
sign-in to an MCP server the call needs (``kind`` "signin", with the server, the sealed start
link the caller gives, and whether the person was sent it). In the turn's map (field ->
request id) an approval's field is its call id, a sign-in's ``signin:<call id>:<n>`` (its
n-th sign-in), so one call can have both and more than one sign-in, and asking again for the
same one opens nothing. What a call waits on now is its newest request. A sign-in that
expires is audited as a connection (``signin_expired``), an approval as before. Requests
stored before the kinds were kept read as approvals.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.state.audit import AuditEntry, AuditKind, AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication
from bot.turn.model import QueuedTurn, TurnKind

KEEP_S = 8 * 24 * 3600  # the longest a request is kept (approval.timeout_s: 7 days at most)
# How long a request (its arguments with it) is kept after its deadline, decided or not: the
# resumed turn reads its decision at once, a late click is told it was decided, the card is
# rewritten from it; the audit log keeps the decision without the arguments.
AFTER_DEADLINE_S = 3600
EXPIRE_BATCH = 100  # requests one look at a shard's deadline index expires at most
WOKEN_IDLE_MS = 10**12  # a woken turn's entry looks idle for ages: claimed at the next look
WAKER = "approvals"  # the consumer name a woken entry is claimed to


APPROVAL = "approval"  # a request's kind: a person's yes before a call runs
SIGN_IN = "signin"  # a request's kind: a person's sign-in to the MCP server a call needs
SIGN_IN_FIELD = "signin:"  # a sign-in's field in the turn's map: + call id + ":" + n
# The reason a sign-in request denied at its callback keeps (bot/oauth/flows.py decides it):
SIGNIN_DECLINED = "declined"  # the person did not allow access at the authorization server
SIGNIN_FAILED = "failed"  # the authorization server refused the code, or its answer failed a check
SIGNIN_UNAVAILABLE = "unavailable"  # the authorization server could not be reached


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
    description: str = ""  # the tool's own one-line description (its author's words)
    source: str = ""  # where the tool comes from: "python", "module NAME", "mcp SERVER"
    destructive: bool = False  # marked destructive (an MCP hint) or confirm=True (Python)
    kind: str = APPROVAL  # APPROVAL or SIGN_IN
    server: str = ""  # the MCP server (not given: the one ``source`` names; "" for others)
    # a sign-in's start link, sealed by the caller (never in a log line all the same)
    link: str = dataclasses.field(default="", repr=False)
    shown: bool = False  # a sign-in's link was sent to the person (an ephemeral message)
    preview: str = ""  # what the tool said of the call for the card (tools/preview.py JSON)
    # The card mentions the requester: the call is a scheduled run's, which nobody watches
    mention: bool = False

    def __post_init__(self) -> None:
        if not self.server:  # stored before it was kept, or an approval's: from its source
            object.__setattr__(self, "server", server_of(self.source))

    @property
    def open(self) -> bool:
        return self.state is ApprovalState.PENDING

    @property
    def sign_in(self) -> bool:
        return self.kind == SIGN_IN

    @property
    def timeout_s(self) -> float:
        """How long it was open for a decision."""
        return max(self.deadline - self.created, 0.0)

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
            description=data.get("description", ""),
            source=data.get("source", ""),
            destructive=data.get("destructive") == "1",
            kind=data.get("kind") or APPROVAL,
            server=data.get("server", ""),
            link=data.get("link", ""),
            shown=data.get("shown") == "1",
            preview=data.get("preview", ""),
            mention=data.get("mention") == "1",
        )


def server_of(source: str) -> str:
    """The MCP server a tool's source names ("mcp NAME"; "" for any other source) (pure)."""
    kind, _, name = source.partition(" ")
    return name if kind == "mcp" else ""


def sign_in_field(call_id: str, n: int) -> str:
    """The turn map's field of a call's ``n``-th sign-in request (pure)."""
    return f"{SIGN_IN_FIELD}{call_id}:{n}"


def call_of(field: str) -> tuple[str, int]:
    """The call a turn map's field names, and which of its sign-ins (0: its approval)
    (pure)."""
    if field.startswith(SIGN_IN_FIELD):
        call_id, _, n = field.removeprefix(SIGN_IN_FIELD).rpartition(":")
        if call_id and n.isdigit():
            return call_id, int(n)
    return field, 0


@dataclass(frozen=True)
class CallSignIns:
    """A call's sign-in requests so far: how many (the n of its newest), and the newest
    (None: none yet, or no longer kept)."""

    count: int
    newest: ApprovalRequest | None

    @property
    def gone(self) -> bool:
        """One was opened and is no longer kept."""
        return self.count > 0 and self.newest is None


@dataclass(frozen=True)
class Overdue:
    """What a look at the deadlines did: the requests it expired, and the deadline of the
    next one due (None: no request waits)."""

    expired: list[str]
    next_due: float | None


@dataclass(frozen=True)
class ToolFacts:
    """What a person deciding needs to know of the tool, kept with its request."""

    description: str = ""  # one line
    source: str = ""
    destructive: bool = False
    preview: str = ""  # what the tool says of this call (tools/preview.py, as JSON)


# KEYS: the turn's map, the new request's hash, the shard's deadline index
# ARGV: the request's field in the turn's map, request id, fields (JSON), TTL, deadline
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
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[2])
return {ARGV[2], 1}
"""

# KEYS: the request, its turn's stream, the shard's deadline index
# ARGV: state, by, reason, now, group, idle ms, request id
# Decides an open request before its deadline (else expires it) and wakes its turn.
# Returns the request's state after the step, and 1 when this step decided it.
DECIDE = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'', 0} end
if state ~= 'pending' then return {state, 0} end
redis.call('ZREM', KEYS[3], ARGV[7])
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

# KEYS: the shard's deadline index, then the requests (of one turn); ARGV: now.
# Expires those open past their deadline; returns their ids.
EXPIRE = """
local expired = {}
for i = 2, #KEYS do
  local key = KEYS[i]
  if redis.call('HGET', key, 'state') == 'pending'
      and tonumber(redis.call('HGET', key, 'deadline')) <= tonumber(ARGV[1]) then
    redis.call('HSET', key, 'state', 'expired', 'at', ARGV[1])
    local id = redis.call('HGET', key, 'id')
    redis.call('ZREM', KEYS[1], id)
    table.insert(expired, id)
  end
end
return expired
"""

# KEYS: the request. Takes back one run of an approved call (never below 0; nothing for a
# request no longer kept). Returns the runs counted after.
GIVE_BACK = """
local uses = tonumber(redis.call('HGET', KEYS[1], 'uses') or '0') or 0
if uses <= 0 then return 0 end
return redis.call('HINCRBY', KEYS[1], 'uses', -1)
"""

# KEYS: the request; ARGV: a field, its value. Sets it on a request still kept (never makes
# a hash without its TTL): 1 when set.
SET_KEPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

# KEYS: the turn's map, the request, the shard's deadline index; ARGV: call id, request id
# Takes back a request nobody was shown (the person has too many open): 1 when withdrawn.
WITHDRAW = """
if redis.call('HGET', KEYS[2], 'state') ~= 'pending' then return 0 end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
"""

# KEYS: the shard's deadline index, its turn stream, its audit stream
# ARGV: now, group, idle ms, what the shard's request keys start with, the audit's length,
#       how many at most
# Expires the shard's open requests past their deadline, each with its audit entry (the
# fields AuditLog writes for ``audited(request, expired_action(request), 'expired')``: an
# approval's, or a sign-in's as a connection), and wakes each one's turn as DECIDE does.
# Returns the ids of those expired, and the deadline of the next request due in the shard
# ('' when none waits).
EXPIRE_OVERDUE = """
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[6])
local expired = {}
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local key = ARGV[4] .. id
  local f = redis.call('HMGET', key, 'state', 'deadline', 'user', 'tool', 'call_id', 'entry',
                       'channel', 'thread_ts', 'kind', 'server')
  local deadline = tonumber(f[2]) or 0
  if f[1] == 'pending' and deadline > now then
    redis.call('ZADD', KEYS[1], f[2], id)  -- not due after all: its own deadline counts
  elseif f[1] == 'pending' then
    redis.call('HSET', key, 'state', 'expired', 'at', ARGV[1])
    local detail = cjson.encode({tool = f[4], call = f[5], turn = f[6], channel = f[7],
                                 thread = f[8]})
    local kind, action, target = 'approval', 'approval_expired', f[4]
    if f[9] == 'signin' then
      kind, action, target = 'connection', 'signin_expired', f[10]
      detail = cjson.encode({tool = f[4], call = f[5], turn = f[6], server = f[10],
                             channel = f[7], thread = f[8]})
    end
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'kind', kind,
               'actor', f[3], 'action', action, 'target', target,
               'outcome', 'expired', 'detail', detail, 'at', ARGV[1])
    local entry = string.match(f[6] or '', '[^/]*$')
    redis.pcall('XCLAIM', KEYS[2], ARGV[2], 'approvals', 0, entry, 'IDLE', ARGV[3], 'JUSTID')
    table.insert(expired, id)
  end
end
local following = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {expired, following[2] or ''}
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
        self._give_back = client.register_script(GIVE_BACK)  # as ``use``: no replica waited for
        self._set_kept = client.register_script(SET_KEPT)
        # Looked for every second by every worker: no replica waited for (an expiry lost in
        # a failover leaves the request in the index, and the next look makes it again).
        self._expire_overdue = client.register_script(EXPIRE_OVERDUE)

    async def open(
        self,
        queued: QueuedTurn,
        call_id: str,
        tool: str,
        arguments: str,
        timeout_s: float,
        facts: ToolFacts | None = None,
        *,
        kind: str = APPROVAL,
        server: str = "",
        link: str = "",
        field: str = "",
    ) -> tuple[ApprovalRequest, bool]:
        """The request for this call, opened now (True) or earlier (False); ``facts``: what
        the card shows of the tool. ``field``: the request's field in the turn's map (the
        call id for an approval, :func:`sign_in_field` for a sign-in); ``server``: the MCP
        server (else the one ``facts.source`` names); ``link``: a sign-in's sealed start
        link (it may be set later, :meth:`set_link`)."""
        turn, entry_id = queued.turn, queued.entry_id
        facts = facts or ToolFacts()
        now = time.time()
        shards = self.keys.shards
        shard = shards.of_id(entry_id)
        request_id = shards.qualify(shard, secrets.token_hex(8))
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
            "description": facts.description,
            "source": facts.source,
            "destructive": "1" if facts.destructive else "",
            "kind": kind,
            "server": server or server_of(facts.source),
            "link": link,
            "shown": "",
            "preview": facts.preview,
            "mention": "1" if turn.kind is TurnKind.SCHEDULED else "",
        }
        found, new = await self._open(
            keys=[
                self.keys.turn_approvals(entry_id),
                self.keys.approval(request_id),
                self.keys.approval_deadlines(shard),
            ],
            args=[
                field or call_id,
                request_id,
                json.dumps(fields),
                kept_for_s(timeout_s),
                repr(now + timeout_s),
            ],
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
        """The turn's requests, oldest first: with ``call_ids``, what each of those calls
        waits on now (its newest request, approval or sign-in: an older, decided approval
        does not count while a sign-in after it is open); without, every request of the
        turn (every card that shows one)."""
        ids: dict[str, str] = await self.client.hgetall(self.keys.turn_approvals(entry_id))
        wanted = set(call_ids) if call_ids is not None else None
        chosen = [rid for f, rid in ids.items() if wanted is None or call_of(f)[0] in wanted]
        if not chosen:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for request_id in chosen:
                pipe.hgetall(self.keys.approval(request_id))
            found = await pipe.execute()
        requests = sorted(
            (ApprovalRequest.parse(data) for data in found if data),
            key=lambda r: (r.created, r.id),
        )
        if wanted is None:
            return requests
        newest = {r.call_id: r for r in requests}  # the later of a call's requests wins
        return [r for r in requests if newest[r.call_id] is r]

    async def sign_ins_of(self, entry_id: str, call_id: str) -> CallSignIns:
        """The call's sign-in requests so far: how many, and its newest (what the call
        waits on if it waits for a sign-in)."""
        ids: dict[str, str] = await self.client.hgetall(self.keys.turn_approvals(entry_id))
        numbered: dict[int, str] = {}
        for f, request_id in ids.items():
            call, n = call_of(f)
            if n and call == call_id:
                numbered[n] = request_id
        if not numbered:
            return CallSignIns(0, None)
        count = max(numbered)
        return CallSignIns(count, await self.get(numbered[count]))

    async def decide(
        self, request_id: str, approved: bool, by: str, reason: str = ""
    ) -> tuple[ApprovalState | None, bool]:
        """Decide an open request and wake its turn. Returns the request's state after the
        step (None: no such request) and whether this call decided it (a second click, or a
        click after the deadline, decides nothing)."""
        shard = self.keys.shards.of_id(request_id)
        state, decided = await self._decide(
            keys=[
                self.keys.approval(request_id),
                self.keys.turns(shard),
                self.keys.approval_deadlines(shard),
            ],
            args=[
                (ApprovalState.APPROVED if approved else ApprovalState.DENIED).value,
                by,
                reason,
                repr(time.time()),
                self.keys.workers,
                WOKEN_IDLE_MS,
                request_id,
            ],
        )
        return (ApprovalState(state) if state else None), bool(int(decided))

    async def expire_due(self, requests: Iterable[ApprovalRequest]) -> list[str]:
        """Expire those still open past their deadline (the requests of one turn); the ids
        of those expired now."""
        open_ = [r for r in requests if r.open]
        if not open_:
            return []
        shard = self.keys.shards.of_id(open_[0].id)
        keys = [self.keys.approval_deadlines(shard), *(self.keys.approval(r.id) for r in open_)]
        return [str(i) for i in await self._expire(keys=keys, args=[repr(time.time())])]

    async def expire_overdue(self, audit: AuditLog, limit: int = EXPIRE_BATCH) -> Overdue:
        """Expire every shard's open requests past their deadline, each audited and its
        turn woken in the same step (the next look for idle entries claims it): the ids of
        those expired now, and when the next one is due."""
        now = repr(time.time())

        async def one(shard: int) -> tuple[list[str], float | None]:
            expired, following = await self._expire_overdue(
                keys=[
                    self.keys.approval_deadlines(shard),
                    self.keys.turns(shard),
                    audit.keys.audit(shard),
                ],
                args=[
                    now,
                    self.keys.workers,
                    WOKEN_IDLE_MS,
                    self.keys.approval_prefix(shard),
                    audit.max_entries,
                    limit,
                ],
            )
            return [str(i) for i in expired], float(following) if following else None

        found = await asyncio.gather(*(one(shard) for shard in self.keys.shards.all()))
        due = [following for _, following in found if following is not None]
        return Overdue(
            [request_id for ids, _ in found for request_id in ids], min(due) if due else None
        )

    async def use(self, request_id: str) -> int:
        """Count a run of an approved call; the count so far (1: its first run)."""
        return int(await self.client.hincrby(self.keys.approval(request_id), "uses", 1))

    async def give_back(self, request_id: str) -> int:
        """Take back a run counted by :meth:`use` that never started (refused at the door:
        sign-in needed), so the next :meth:`use` counts a first run again; never below 0,
        nothing written for a request no longer kept. The count after."""
        return int(await self._give_back(keys=[self.keys.approval(request_id)]))

    async def mark_shown(self, request_id: str) -> bool:
        """A sign-in's link was sent to the person (a retried park does not send it again).
        False: the request is no longer kept."""
        return bool(
            int(await self._set_kept(keys=[self.keys.approval(request_id)], args=["shown", "1"]))
        )

    async def set_link(self, request_id: str, link: str) -> bool:
        """A sign-in's start link (sealed by the caller), once its flow is stored. False:
        the request is no longer kept."""
        return bool(
            int(await self._set_kept(keys=[self.keys.approval(request_id)], args=["link", link]))
        )

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
            keys=[
                self.keys.turn_approvals(request.entry),
                self.keys.approval(request.id),
                self.keys.approval_deadlines(self.keys.shards.of_id(request.id)),
            ],
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


def expired_action(request: ApprovalRequest) -> str:
    """The audit's action for ``request`` expiring: ``signin_expired`` for a sign-in,
    ``approval_expired`` for an approval (pure)."""
    return "signin_expired" if request.sign_in else "approval_expired"


def audited(
    request: ApprovalRequest, action: str, outcome: str, actor: str = "", **extra: str
) -> AuditEntry:
    """The audit entry of what happened to ``request`` (requested, approved, denied,
    expired), by ``actor`` (the person who asked, unless another is named): an approval's
    is about its tool, a sign-in's is a connection's, about its server."""
    server = {"server": request.server} if request.sign_in else {}
    return AuditEntry(
        kind=AuditKind.CONNECTION if request.sign_in else AuditKind.APPROVAL,
        actor=actor or request.user,
        action=action,
        target=request.server if request.sign_in else request.tool,
        outcome=outcome,
        detail={
            **as_fields(request),
            **server,
            **extra,
            "channel": request.channel,
            "thread": request.thread_ts,
        },
    )
