"""People's tokens for MCP servers in Redis, sealed, refreshed once across replicas; and each
server's client registration.

A person's connection to a server is four records in the team's shard (one slot on a Redis
Cluster, so each step below is one Lua script):

- the token hash (``Keys.oauth_token``): ``ct``, the sealed :class:`TokenSnapshot`; ``ver``,
  counting its writes; ``exp``, when the token expires (epoch seconds, "" when unknown) and
  ``at``, when it was written, both in plain, so the gate reads them without decrypting;
- the last version written (``Keys.oauth_version``), kept when the connection is forgotten:
  a reconnection's token gets a version never used before, so a process still holding the
  forgotten token (its cache, a refresh under way) cannot take the new one for it, nor
  overwrite or forget it;
- the person's field in ``Keys.oauth_conns`` (server -> issuer, since, scope) and in the
  team's ``Keys.oauth_team_conns`` (``<user>/<server>`` -> issuer, since): what lists
  connections, never a secret.

:class:`TokenRecords` is one person's token for one server, ``PersonTokens`` for the provider
(tools/mcp/oauth/tokens.py). ``fresh()`` returns the token while it has 10 s of life or more;
else one process refreshes it: it takes a lock on the record (redis-py's ``Lock``), reads it
again (another replica may have refreshed meanwhile: that token is used), calls the injected
refresh, bounded by :data:`REFRESH_TIMEOUT_S` (below the lock's life: a refresh that takes
longer is given up as ``Unavailable`` and the record kept, so the lock cannot lapse while a
refresh token is in flight and another replica present it again), and writes the new token
only if the record's version is still the one it read (should the lock lapse all the same),
so a rotated refresh token is never overwritten by an older one. A refused refresh forgets
the connection with its audit entry in the same step; an authorization server that cannot
be reached leaves it as it is. :meth:`TokenRecords.no_refresh` holds the same lock for a
disconnect: no refresh rotates the tokens it revokes and forgets meanwhile. The writes go
through :class:`Replication`: a failover does not lose a rotated refresh token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError
from redis.exceptions import LockError

from bot.oauth.crypto import Sealer, Unreadable, client_aad, token_aad
from bot.state.audit import AuditEntry, AuditKind, AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.errors import REDIS_DOWN
from bot.state.redis.keys import Keys, issuer_id
from bot.state.redis.replication import Replication
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.tokens import (
    Freshness,
    Gone,
    Held,
    Refreshed,
    RefreshOutcome,
    RefreshUnavailable,
    Refused,
    TokenSnapshot,
    Unavailable,
)

log = logging.getLogger(__name__)

FRESH_FOR_S = 10  # a token with less life than this is refreshed before it is used
LOCK_TIMEOUT_S = 30  # the refresh lock lapses after this (a process that died holding it)
LOCK_WAIT_S = 35  # how long a process waits for another's refresh before giving up
# A refresh under the lock is given up after this (Unavailable, the record kept): well within
# the lock's life, whatever the authorization server's per-phase HTTP timeouts add up to.
REFRESH_TIMEOUT_S = LOCK_TIMEOUT_S - 5

Refresh = Callable[[TokenSnapshot], Awaitable[RefreshOutcome]]

# KEYS: the new token hash, the person's conns, the team's conns, the team shard's audit,
#       the token hash of the issuer the conns field names now (KEYS[1] when the same or none),
#       the last version written
# ARGV: ct, exp, now, server, conns JSON, team-conns field, team-conns JSON, audit length,
#       the issuer id the caller read from the conns field ('' none), then the audit fields
# Writes the connection (version: one more than any written before, this connection's, the
# one it replaces or one forgotten), replacing that of another issuer; returns {version, ''},
# or {-1, the issuer id found} when the conns field moved on since the caller read it (the
# caller reads again).
STORE = """
local named = redis.call('HGET', KEYS[2], ARGV[4])
local found = ''
if named then found = cjson.decode(named)['iss8'] or '' end
if found ~= ARGV[9] then return {-1, found} end
local ver = tonumber(redis.call('HGET', KEYS[1], 'ver') or '0')
if KEYS[5] ~= KEYS[1] then
  local old = tonumber(redis.call('HGET', KEYS[5], 'ver') or '0')
  if old > ver then ver = old end
  redis.call('DEL', KEYS[5])
end
local last = tonumber(redis.call('GET', KEYS[6]) or '0')
if last > ver then ver = last end
ver = ver + 1
redis.call('SET', KEYS[6], ver)
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'ct', ARGV[1], 'ver', ver, 'exp', ARGV[2], 'at', ARGV[3])
redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
redis.call('HSET', KEYS[3], ARGV[6], ARGV[7])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[8], '*', unpack(ARGV, 10))
return {ver, ''}
"""

# KEYS: the token hash, the last version written; ARGV: the version read, ct, exp, now
# Writes a refreshed token only over the version it was refreshed from: the new version, or
# 0 when the record moved on (another process wrote a newer one) or is gone.
CAS_TOKEN = """
local ver = redis.call('HGET', KEYS[1], 'ver')
if not ver or tonumber(ver) ~= tonumber(ARGV[1]) then return 0 end
ver = tonumber(ver) + 1
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if last >= ver then ver = last + 1 end
redis.call('HSET', KEYS[1], 'ct', ARGV[2], 'ver', ver, 'exp', ARGV[3], 'at', ARGV[4])
redis.call('SET', KEYS[2], ver)
return ver
"""

# KEYS: the token hash, the person's conns, the team's conns, the team shard's audit
# ARGV: the version read ('' whichever), server, issuer id, team-conns field, issuer,
#       audit length, then the audit fields
# Forgets the connection (the fields only while they name this issuer) and writes the audit
# entry: 1; 0 when there was nothing to forget, or the token moved on from the version read.
FORGET = """
local ver = redis.call('HGET', KEYS[1], 'ver')
if ARGV[1] ~= '' and (not ver or tonumber(ver) ~= tonumber(ARGV[1])) then return 0 end
local forgot = redis.call('DEL', KEYS[1])
local named = redis.call('HGET', KEYS[2], ARGV[2])
if named and cjson.decode(named)['iss8'] == ARGV[3] then
  redis.call('HDEL', KEYS[2], ARGV[2])
  forgot = 1
end
local listed = redis.call('HGET', KEYS[3], ARGV[4])
if listed and cjson.decode(listed)['issuer'] == ARGV[5] then
  redis.call('HDEL', KEYS[3], ARGV[4])
end
if forgot == 0 then return 0 end
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[6], '*', unpack(ARGV, 7))
return 1
"""


class KeyNotHeld(Exception):
    """A record sealed with a key this process does not hold: a replica deployed with another
    ``SLACK_AGENT_SECRET_KEY``. Read as unavailable, never as "not connected": asking people to
    connect again would seal their new tokens with the wrong key."""


@dataclass(frozen=True)
class Connection:
    """One of a person's connections, as listed (no secret)."""

    server: str
    issuer: str
    since: float
    scope: str


@dataclass(frozen=True)
class TeamConnection:
    """Someone's connection, as an admin's list shows it (no secret, no scope)."""

    user: str
    server: str
    issuer: str
    since: float


@dataclass(frozen=True)
class _Issuer:
    issuer: str
    iss8: str


class Connections:
    """Every person's connections in one Redis: each one's :class:`TokenRecords`, and the
    lists. ``replication``: what must be on a replica before a write counts."""

    def __init__(
        self,
        client: Redis,
        keys: Keys,
        sealer: Sealer,
        audit: AuditLog,
        replication: Replication | None = None,
        *,
        refresh_timeout_s: float = REFRESH_TIMEOUT_S,
    ) -> None:
        """``refresh_timeout_s``: how long a refresh may take under the lock (tests shorten
        it; it must stay below ``LOCK_TIMEOUT_S``)."""
        if not 0 < refresh_timeout_s < LOCK_TIMEOUT_S:
            raise ValueError("a refresh must be given up before its lock lapses")
        self.client = client
        self.keys = keys
        self.sealer = sealer
        self.audit = audit
        self.refresh_timeout_s = refresh_timeout_s
        self.replication = replication or Replication()
        self.store_step = self.replication.register(client, STORE)
        self.cas_token = self.replication.register(client, CAS_TOKEN)
        self.forget_step = self.replication.register(client, FORGET)

    def tokens(
        self, account: Account, server: str, refresh: Refresh, *, issuer: str | None = None
    ) -> TokenRecords:
        """``account``'s token for ``server``: from ``issuer``, or (None) from whichever
        issuer the person's connection names now."""
        return TokenRecords(self, account, server, refresh, issuer)

    async def connections(self, account: Account) -> list[Connection]:
        """The person's connections, by server."""
        found = await self.client.hgetall(self.keys.oauth_conns(account.team, account.user))
        listed = []
        for server, text in found.items():
            data = json.loads(text)
            listed.append(
                Connection(
                    server, data["issuer"], float(data.get("since") or 0), data.get("scope") or ""
                )
            )
        return sorted(listed, key=lambda c: c.server)

    async def team_connections(self, team: str) -> list[TeamConnection]:
        """Everyone's connections in the team, by person and server."""
        found = await self.client.hgetall(self.keys.oauth_team_conns(team))
        listed = []
        for name, text in found.items():
            user, _, server = name.partition("/")
            data = json.loads(text)
            listed.append(TeamConnection(user, server, data["issuer"], float(data["since"])))
        return sorted(listed, key=lambda c: (c.user, c.server))

    def audit_args(self, entry: AuditEntry) -> list[str]:
        """An audit entry's fields as a script's arguments (name, value, ...)."""
        return [part for pair in self.audit.fields(entry).items() for part in pair]


@dataclass(frozen=True)
class _Record:
    """A token hash as read: whose issuer, its version, the sealed blob."""

    issuer: _Issuer
    ver: int
    sealed: str


class TokenRecords:
    """One person's token for one server (``PersonTokens``), shared by every process."""

    def __init__(
        self,
        connections: Connections,
        account: Account,
        server: str,
        refresh: Refresh,
        issuer: str | None = None,
    ) -> None:
        self._c = connections
        self.account = account
        self.server = server
        self._refresh = refresh
        self._fixed = _Issuer(issuer, issuer_id(issuer)) if issuer is not None else None
        self._held: Held | None = None  # the last token read, and from which issuer
        self._held_iss8 = ""

    def __repr__(self) -> str:
        who = self.account
        return f"TokenRecords({who.team}/{who.user}, {self.server!r})"

    # --- keys -----------------------------------------------------------------------------

    def _token_key(self, iss8: str) -> str:
        a = self.account
        return self._c.keys.oauth_token(a.team, a.user, self.server, iss8)

    @property
    def _version_key(self) -> str:
        a = self.account
        return self._c.keys.oauth_version(a.team, a.user, self.server)

    @property
    def _conns_key(self) -> str:
        return self._c.keys.oauth_conns(self.account.team, self.account.user)

    @property
    def _team_conns_key(self) -> str:
        return self._c.keys.oauth_team_conns(self.account.team)

    @property
    def _team_field(self) -> str:
        return f"{self.account.user}/{self.server}"

    @property
    def _audit_key(self) -> str:
        keys = self._c.keys
        return keys.audit(keys.team_shard(self.account.team))

    # --- reading --------------------------------------------------------------------------

    async def current(self) -> Held | None:
        """The token as stored now (None: not connected, or unreadable with the keys held),
        opened only when its version is not the one read last."""
        record = await self._read()
        if record is None:
            return None
        return self._opened(record)

    async def _read(self) -> _Record | None:
        client = self._c.client
        if self._fixed is not None:
            return _record(self._fixed, await client.hgetall(self._token_key(self._fixed.iss8)))
        guess = self._held_iss8
        async with client.pipeline(transaction=False) as pipe:
            pipe.hget(self._conns_key, self.server)
            if guess:
                pipe.hgetall(self._token_key(guess))
            replies = await pipe.execute()
        if replies[0] is None:
            return None
        named = json.loads(replies[0])
        issuer = _Issuer(named["issuer"], named["iss8"])
        data = replies[1] if guess == issuer.iss8 else None
        if data is None:
            data = await client.hgetall(self._token_key(issuer.iss8))
        return _record(issuer, data)

    def _opened(self, record: _Record) -> Held | None:
        held = self._held
        if held is not None and held.ver == record.ver and self._held_iss8 == record.issuer.iss8:
            return held
        a = self.account
        aad = token_aad(a.team, a.user, self.server, record.issuer.issuer)
        try:
            snapshot = TokenSnapshot.model_validate_json(self._c.sealer.open(record.sealed, aad))
        except Unreadable as error:
            if error.reason == "other key":  # a replica with the wrong key: never "reconnect"
                raise KeyNotHeld from None
            log.warning(
                "a sign-in token of %s for %s does not open (%s): connect again",
                a.user,
                self.server,
                error.reason,
            )
            return None
        except ValidationError:
            log.warning("a sign-in token of %s for %s is not a token", a.user, self.server)
            return None
        opened = Held(record.ver, snapshot)
        self._remember(opened, record.issuer.iss8)
        return opened

    def _remember(self, held: Held, iss8: str) -> None:
        self._held, self._held_iss8 = held, iss8

    # --- fresh ----------------------------------------------------------------------------

    async def fresh(self, *, after_401_of: int | None = None) -> Freshness:
        """A token with at least 10 s of life (refreshed first when needed, once across every
        process); ``after_401_of``: the server refused that version, so a newer one or a
        refreshed one. ``Gone``: not connected (or the refresh was refused: forgotten now);
        ``Unavailable``: Redis or the authorization server could not be reached."""
        try:
            return await self._fresh(after_401_of)
        except KeyNotHeld:
            log.warning(
                "a sign-in token of %s for %s is sealed with a key this process does not hold "
                "(check SLACK_AGENT_SECRET_KEY and SLACK_AGENT_SECRET_KEY_PREVIOUS on every "
                "replica)",
                self.account.user,
                self.server,
            )
            return Unavailable("key")
        except REDIS_DOWN as error:
            log.warning(
                "sign-in tokens for %s cannot be read: %s", self.server, type(error).__name__
            )
            return Unavailable("redis")

    async def _fresh(self, after_401_of: int | None) -> Freshness:
        held = await self.current()
        if held is None:
            return Gone()
        if _usable(held, after_401_of):
            return held
        iss8 = self._held_iss8
        async with self._refresh_lock(iss8) as locked:
            if not locked:
                return Unavailable("refresh busy")
            record = await self._read()  # again, now that no other process refreshes it
            again = self._opened(record) if record is not None else None
            if record is None or again is None:
                return Gone()
            moved_on = again.ver != held.ver or record.issuer.iss8 != iss8
            if moved_on and _usable(again, after_401_of):
                return again  # another process refreshed it (or the person reconnected)
            return await self._refreshed(again, record.issuer)

    @contextlib.asynccontextmanager
    async def _refresh_lock(self, iss8: str) -> AsyncIterator[bool]:
        """The lock one process holds while it refreshes this token (across replicas): True
        once held, False when another held it longer than ``LOCK_WAIT_S``."""
        a = self.account
        lock = self._c.client.lock(
            self._c.keys.oauth_refresh(a.team, a.user, self.server, iss8),
            timeout=LOCK_TIMEOUT_S,
            blocking_timeout=LOCK_WAIT_S,
            thread_local=False,
        )
        if not await lock.acquire():
            yield False
            return
        try:
            yield True
        finally:
            # A lock that lapsed (another may hold it now) is not this process's to free.
            with contextlib.suppress(LockError):
                await lock.release()

    @contextlib.asynccontextmanager
    async def no_refresh(self) -> AsyncIterator[None]:
        """While inside, no process refreshes this connection (its refresh lock is held), so
        the tokens read inside are the ones kept: what a disconnect revokes and forgets. Not
        connected: nothing to hold. Held elsewhere longer than ``LOCK_WAIT_S``: goes ahead
        without it (logged)."""
        issuer = self._fixed
        if issuer is None:
            named = await self._c.client.hget(self._conns_key, self.server)
            if named is None:
                yield
                return
            data = json.loads(named)
            issuer = _Issuer(data["issuer"], data["iss8"])
        async with self._refresh_lock(issuer.iss8) as locked:
            if not locked:
                log.warning(
                    "the refresh lock of %s for %s is held elsewhere: going ahead without it",
                    self.account.user,
                    self.server,
                )
            yield

    async def _refreshed(self, held: Held, issuer: _Issuer) -> Freshness:
        try:
            async with asyncio.timeout(self._c.refresh_timeout_s):
                outcome = await self._refresh(held.snapshot)
        except TimeoutError:
            log.warning(
                "refreshing the sign-in token of %s for %s took over %s s: given up, kept",
                self.account.user,
                self.server,
                self._c.refresh_timeout_s,
            )
            return Unavailable("timeout")
        if isinstance(outcome, RefreshUnavailable):
            return Unavailable(outcome.reason)
        if isinstance(outcome, Refused):
            if await self._forget_version(held.ver, issuer, outcome.reason):
                self._held = None
                return Gone()
            return await self._now()
        assert isinstance(outcome, Refreshed)
        a = self.account
        snapshot = outcome.snapshot
        aad = token_aad(a.team, a.user, self.server, issuer.issuer)
        written = int(
            await self._c.cas_token(
                keys=[self._token_key(issuer.iss8), self._version_key],
                args=[
                    held.ver,
                    self._c.sealer.seal(snapshot.model_dump_json().encode(), aad),
                    _exp(snapshot),
                    repr(time.time()),
                ],
            )
        )
        if not written:  # a newer record was written meanwhile (the lock lapsed): it stands
            return await self._now()
        refreshed = Held(written, snapshot)
        self._remember(refreshed, issuer.iss8)
        return refreshed

    async def _now(self) -> Freshness:
        held = await self.current()
        return held if held is not None else Gone()

    # --- writing --------------------------------------------------------------------------

    async def store(self, snapshot: TokenSnapshot, *, actor: str) -> Held:
        """Keep a new connection (or a reconnection, replacing the one before, whichever its
        issuer), listed and audited (``connected``, by ``actor``) in the same step."""
        if self._fixed is not None and snapshot.issuer != self._fixed.issuer:
            raise ValueError("the token is from another issuer than these records'")
        a = self.account
        issuer = _Issuer(snapshot.issuer, issuer_id(snapshot.issuer))
        now = time.time()
        sealed = self._c.sealer.seal(
            snapshot.model_dump_json().encode(),
            token_aad(a.team, a.user, self.server, issuer.issuer),
        )
        conns = {"iss8": issuer.iss8, "issuer": issuer.issuer, "since": now}
        conns["scope"] = snapshot.scope or snapshot.token.scope or ""
        listed = {"issuer": issuer.issuer, "since": now}
        entry = self._entry(actor, "connected", "ok", issuer.issuer)
        named = await self._c.client.hget(self._conns_key, self.server)
        before = json.loads(named)["iss8"] if named else ""
        while True:
            ver, found = await self._c.store_step(
                keys=[
                    self._token_key(issuer.iss8),
                    self._conns_key,
                    self._team_conns_key,
                    self._audit_key,
                    self._token_key(before or issuer.iss8),
                    self._version_key,
                ],
                args=[
                    sealed,
                    _exp(snapshot),
                    repr(now),
                    self.server,
                    json.dumps(conns),
                    self._team_field,
                    json.dumps(listed),
                    self._c.audit.max_entries,
                    before,
                    *self._c.audit_args(entry),
                ],
            )
            if int(ver) > 0:
                break
            before = str(found)  # another connection was stored meanwhile: replace that one
        held = Held(int(ver), snapshot)
        self._remember(held, issuer.iss8)
        return held

    async def forget(self, *, actor: str, action: str = "disconnected") -> bool:
        """Forget the connection (its token, its listing) with an audit entry (``action``,
        by ``actor``) in the same step; False when there was none."""
        issuer = self._fixed
        if issuer is None:
            named = await self._c.client.hget(self._conns_key, self.server)
            if named is None:
                return False
            data = json.loads(named)
            issuer = _Issuer(data["issuer"], data["iss8"])
        forgot = await self._forget_step(
            "", issuer, self._entry(actor, action, "ok", issuer.issuer)
        )
        self._held = None
        return forgot

    async def _forget_version(self, ver: int, issuer: _Issuer, reason: str) -> bool:
        entry = self._entry(self.account.user, "refresh_failed", reason, issuer.issuer)
        return await self._forget_step(str(ver), issuer, entry)

    async def _forget_step(self, ver: str, issuer: _Issuer, entry: AuditEntry) -> bool:
        forgot = await self._c.forget_step(
            keys=[
                self._token_key(issuer.iss8),
                self._conns_key,
                self._team_conns_key,
                self._audit_key,
            ],
            args=[
                ver,
                self.server,
                issuer.iss8,
                self._team_field,
                issuer.issuer,
                self._c.audit.max_entries,
                *self._c.audit_args(entry),
            ],
        )
        return bool(int(forgot))

    def _entry(self, actor: str, action: str, outcome: str, issuer: str) -> AuditEntry:
        return AuditEntry(
            kind=AuditKind.CONNECTION,
            actor=actor,
            action=action,
            target=self.server,
            outcome=outcome,
            detail={"user": self.account.user, "issuer": issuer},
        )


class ClientRecords:
    """A server's client registration (dynamic registration) for one redirect URI, sealed,
    in the server's shard: the ``get_client_info``/``set_client_info`` half of the SDK's
    ``TokenStorage``."""

    def __init__(
        self,
        client: Redis,
        keys: Keys,
        sealer: Sealer,
        server: str,
        redirect_uri: str,
        replication: Replication | None = None,
    ) -> None:
        self.client = client
        self.sealer = sealer
        self.server = server
        self.redirect_uri = redirect_uri
        self.replication = replication or Replication()
        self._key = keys.oauth_client(server, redirect_uri)
        self._aad = client_aad(server, redirect_uri)

    def __repr__(self) -> str:
        return f"ClientRecords({self.server!r}, {self.redirect_uri!r})"

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The registration kept (None: none, or one that does not open: register again)."""
        sealed = await self.client.get(self._key)
        if sealed is None:
            return None
        try:
            plain = self.sealer.open(str(sealed), self._aad)
            return OAuthClientInformationFull.model_validate_json(plain)
        except Unreadable as error:
            if error.reason == "other key":  # a replica with the wrong key: never "reconnect"
                raise KeyNotHeld from None
            log.warning("the client registration for %s does not open (%s)", self.server, error)
            return None
        except ValidationError:
            log.warning("the client registration for %s is not one", self.server)
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        sealed = self.sealer.seal(client_info.model_dump_json().encode(), self._aad)

        def fill(pipe: Any) -> None:
            pipe.set(self._key, sealed)

        [reply] = await self.replication.pipeline(self.client, fill)
        if isinstance(reply, BaseException):
            raise reply


def _record(issuer: _Issuer, data: dict[str, str]) -> _Record | None:
    if not data or not data.get("ct"):
        return None
    return _Record(issuer, int(data["ver"]), data["ct"])


def _usable(held: Held, after_401_of: int | None) -> bool:
    """Whether ``held`` may be used as it is: not the version a server just refused, and
    with enough life (one without a known expiry lasts until a 401 says otherwise)."""
    if after_401_of is not None and held.ver == after_401_of:
        return False
    expires_at = held.snapshot.expires_at
    return expires_at is None or expires_at - time.time() >= FRESH_FOR_S


def _exp(snapshot: TokenSnapshot) -> str:
    return repr(snapshot.expires_at) if snapshot.expires_at is not None else ""
