"""People's tokens in the real Redis (and a Redis Cluster), as replicas share them: refreshed
once however many ask at once, a newer token taken instead of refreshing again, a refused
refresh forgotten and audited in one step, an unreachable authorization server leaving the
connection as it is, a lapsed lock unable to overwrite a newer token, and nothing readable
in Redis but what lists a connection."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import redis.asyncio as redis
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from bot.oauth.config import OAuthConfig
from bot.oauth.crypto import Sealer
from bot.oauth.flows import SignIns
from bot.oauth.records import (
    LOCK_TIMEOUT_S,
    REFRESH_TIMEOUT_S,
    ClientRecords,
    Connection,
    Connections,
    TeamConnection,
)
from bot.process.state import State
from bot.state.audit import AuditKind, AuditLog
from bot.state.redis.errors import NotReplicated
from bot.state.redis.keys import Keys, issuer_id
from bot.state.redis.replication import Replication
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.grants import Revoked, RevokeOutcome
from tools.mcp.oauth.tokens import (
    Gone,
    Held,
    Refreshed,
    RefreshOutcome,
    RefreshUnavailable,
    Refused,
    TokenSnapshot,
    Unavailable,
)

KEY = bytes(range(32))
ISSUER = "https://as.example.com"
OTHER_ISSUER = "https://login.example.org/tenant"
ALICE = Account("T1", "U1")
REDIRECT = "https://bot.example.com/oauth/callback"
SECRETS = ("at-secret", "rt-secret", "cs-secret")


def snapshot(n: int | str, expires_in: float | None, issuer: str = ISSUER) -> TokenSnapshot:
    return TokenSnapshot(
        issuer=issuer,
        token=OAuthToken(
            access_token=f"at-secret-{n}",
            refresh_token=f"rt-secret-{n}",
            expires_in=int(expires_in) if expires_in is not None else None,
            scope="files:read",
        ),
        expires_at=time.time() + expires_in if expires_in is not None else None,
        client_info=OAuthClientInformationFull(
            client_id="client-1", client_secret="cs-secret-1", redirect_uris=[REDIRECT]
        ),
        oauth_metadata=OAuthMetadata(
            issuer=issuer,
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
        ),
        scope="files:read",
    )


class AuthorizationServer:
    """Refreshes as a strict authorization server does: the refresh token rotates, and an
    old one presented again revokes the family (so a second refresh of one token fails)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.latest = "rt-secret-1"
        self.calls = 0
        self.issued = 1
        self.refuse_with: str | None = None
        self.down = False
        self.started = asyncio.Event()
        self.go_on: asyncio.Event | None = None

    async def refresh(self, held: TokenSnapshot) -> RefreshOutcome:
        self.calls += 1
        self.started.set()
        if self.go_on is not None:
            await self.go_on.wait()
        await asyncio.sleep(self.delay_s)  # the AS taking its time, while others ask
        if self.down:
            return RefreshUnavailable()
        if self.refuse_with is not None:
            return Refused(self.refuse_with)
        if held.token.refresh_token != self.latest:
            self.latest = "revoked"
            return Refused("reused")
        self.issued += 1
        self.latest = f"rt-secret-{self.issued}"
        return Refreshed(snapshot(self.issued, 3600, held.issuer))


def connections(
    state: State, sealer: Sealer | None = None, refresh_timeout_s: float = REFRESH_TIMEOUT_S
) -> Connections:
    return Connections(
        state.client,
        state.keys,
        sealer or Sealer(KEY),
        state.shared.audit,
        state.handle.replication,
        refresh_timeout_s=refresh_timeout_s,
    )


def token_key(state: State, server: str = "files", issuer: str = ISSUER) -> str:
    return state.keys.oauth_token(ALICE.team, ALICE.user, server, issuer_id(issuer))


@pytest.fixture
def replicas(make_state: Callable[..., State]) -> tuple[State, State]:
    """Two processes' states: two Redis clients on the same keys."""
    return make_state(), make_state()


@pytest.mark.cluster
async def test_two_replicas_refresh_once_however_many_ask(
    replicas: tuple[State, State],
) -> None:
    a, b = replicas
    server = AuthorizationServer(delay_s=0.2)
    on_a = connections(a).tokens(ALICE, "files", server.refresh)
    on_b = connections(b).tokens(ALICE, "files", server.refresh)
    stored = await on_a.store(snapshot(1, 5), actor="U1")  # 5 s of life: to refresh
    assert stored.ver == 1

    results = await asyncio.gather(*(r.fresh() for _ in range(10) for r in (on_a, on_b)))

    assert server.calls == 1
    assert all(isinstance(r, Held) for r in results)
    held = [r for r in results if isinstance(r, Held)]
    assert {(h.ver, h.snapshot.token.access_token) for h in held} == {(2, "at-secret-2")}
    assert await a.client.hget(token_key(a), "ver") == "2"
    assert server.latest == "rt-secret-2"  # rotated once, never presented again


@pytest.mark.cluster
async def test_after_a_401_a_newer_token_is_taken_without_refreshing_again(
    replicas: tuple[State, State],
) -> None:
    a, b = replicas
    server = AuthorizationServer()
    on_a = connections(a).tokens(ALICE, "files", server.refresh)
    on_b = connections(b).tokens(ALICE, "files", server.refresh)
    await on_a.store(snapshot(1, 3600), actor="U1")
    old = await on_b.current()
    assert old is not None and old.ver == 1

    refreshed = await on_a.fresh(after_401_of=1)  # the server refused version 1 on A
    assert isinstance(refreshed, Held) and refreshed.ver == 2 and server.calls == 1

    newer = await on_b.fresh(after_401_of=old.ver)  # and on B, which still held version 1
    assert isinstance(newer, Held)
    assert (newer.ver, newer.snapshot.token.access_token) == (2, "at-secret-2")
    assert server.calls == 1
    # Refused in turn, the newest version is refreshed, however long it has to live.
    third = await on_b.fresh(after_401_of=2)
    assert isinstance(third, Held) and third.ver == 3 and server.calls == 2


@pytest.mark.cluster
async def test_a_refused_refresh_forgets_the_connection_with_its_audit_entry(
    state: State,
) -> None:
    server = AuthorizationServer()
    server.refuse_with = "invalid_grant"
    store = connections(state)
    files = store.tokens(ALICE, "files", server.refresh)
    mail = store.tokens(ALICE, "mail", server.refresh)
    await files.store(snapshot(1, 5), actor="U1")
    await mail.store(snapshot("m", 3600), actor="U1")

    assert await files.fresh() == Gone()

    assert not await state.client.exists(token_key(state, "files"))
    assert [c.server for c in await store.connections(ALICE)] == ["mail"]
    assert [(c.user, c.server) for c in await store.team_connections("T1")] == [("U1", "mail")]
    entries = await state.shared.audit.latest(10)
    failed = [e for e in entries if e.action == "refresh_failed"]
    assert len(failed) == 1
    entry = failed[0]
    assert (entry.kind, entry.actor, entry.target, entry.outcome) == (
        AuditKind.CONNECTION,
        "U1",
        "files",
        "invalid_grant",
    )
    assert entry.detail == {"user": "U1", "issuer": ISSUER}
    assert [e.action for e in entries].count("connected") == 2
    # Gone stays gone: nothing to refresh, no second entry.
    assert await files.fresh() == Gone()
    assert server.calls == 1
    assert isinstance(await mail.fresh(), Held)


@pytest.mark.cluster
async def test_an_unreachable_authorization_server_keeps_the_connection(state: State) -> None:
    server = AuthorizationServer()
    server.down = True
    store = connections(state)
    files = store.tokens(ALICE, "files", server.refresh)
    await files.store(snapshot(1, 5), actor="U1")
    before = await state.client.hgetall(token_key(state))

    assert await files.fresh() == Unavailable("unavailable")

    assert await state.client.hgetall(token_key(state)) == before
    assert [c.server for c in await store.connections(ALICE)] == ["files"]
    assert "refresh_failed" not in [e.action for e in await state.shared.audit.latest(10)]
    server.down = False  # back: the same connection refreshes
    refreshed = await files.fresh()
    assert isinstance(refreshed, Held) and refreshed.ver == 2 and server.calls == 2


@pytest.mark.cluster
async def test_a_lapsed_lock_cannot_overwrite_a_newer_token(
    replicas: tuple[State, State],
) -> None:
    a, b = replicas
    slow, quick = AuthorizationServer(), AuthorizationServer()
    slow.go_on = asyncio.Event()
    on_a = connections(a).tokens(ALICE, "files", slow.refresh)
    on_b = connections(b).tokens(ALICE, "files", quick.refresh)
    await on_a.store(snapshot(1, 5), actor="U1")

    first = asyncio.create_task(on_a.fresh())
    await asyncio.wait_for(slow.started.wait(), 10)
    lock = a.keys.oauth_refresh("T1", "U1", "files", issuer_id(ISSUER))
    assert await a.client.delete(lock) == 1  # A's lock lapses while its AS takes its time
    quick.issued = 40
    by_b = await on_b.fresh()  # B takes the lock and refreshes
    assert isinstance(by_b, Held) and by_b.snapshot.token.access_token == "at-secret-41"
    slow.issued = 90
    slow.go_on.set()  # A's refresh comes back, with a token for the version both read

    by_a = await first
    assert isinstance(by_a, Held)
    assert (by_a.ver, by_a.snapshot.token.access_token) == (2, "at-secret-41")
    assert await a.client.hget(token_key(a), "ver") == "2"
    reader = connections(b).tokens(ALICE, "files", quick.refresh)
    stored = await reader.current()
    assert stored is not None and stored.snapshot.token.refresh_token == "rt-secret-41"


@pytest.mark.cluster
async def test_a_process_holding_a_forgotten_token_takes_the_new_connection(
    replicas: tuple[State, State],
) -> None:
    """A connection forgotten and made again gets a version never used before: a process
    that still holds the forgotten token takes the new one (not its old one by the same
    version), and its refresh of the old one, refused, forgets nothing. (The sign-in test of
    tests/faults found it: a replica used her revoked token after she connected again, had
    its refresh refused, and forgot her new connection.)"""
    a, b = replicas
    server = AuthorizationServer()
    on_a = connections(a).tokens(ALICE, "files", server.refresh)
    on_b = connections(b).tokens(ALICE, "files", server.refresh)
    await on_a.store(snapshot(1, 3600), actor="U1")
    assert isinstance(await on_b.fresh(), Held)  # B holds version 1

    assert await on_a.forget(actor="U1")
    second = await on_a.store(snapshot(2, 3600), actor="U1")  # she connects again
    held = await on_b.fresh()
    assert isinstance(held, Held)
    assert (held.ver, held.snapshot.token.access_token) == (second.ver, "at-secret-2")

    # B refreshes it (the server refused it: 401) while it is forgotten and made again.
    refusing = AuthorizationServer()
    refusing.refuse_with = "invalid_grant"
    refusing.go_on = asyncio.Event()
    late = asyncio.create_task(
        connections(b).tokens(ALICE, "files", refusing.refresh).fresh(after_401_of=held.ver)
    )
    await asyncio.wait_for(refusing.started.wait(), 10)
    assert await on_a.forget(actor="U1")
    third = await on_a.store(snapshot(3, 3600), actor="U1")
    refusing.go_on.set()

    taken = await late
    assert isinstance(taken, Held)
    assert (taken.ver, taken.snapshot.token.access_token) == (third.ver, "at-secret-3")
    assert len({1, second.ver, third.ver}) == 3
    assert [c.server for c in await connections(a).connections(ALICE)] == ["files"]
    actions = [e.action for e in await a.shared.audit.latest(20)]
    assert "refresh_failed" not in actions  # the refused refresh forgot nothing
    server.latest = "rt-secret-3"  # refreshed, its version goes on from there
    refreshed = await on_b.fresh(after_401_of=third.ver)
    assert isinstance(refreshed, Held) and refreshed.ver == third.ver + 1


@pytest.mark.cluster
async def test_a_refresh_that_hangs_is_given_up_before_its_lock_lapses(
    replicas: tuple[State, State],
) -> None:
    """An authorization server that never answers: the refresh is given up (Unavailable,
    the record as it was) while the lock is still this process's, and the lock is freed, so
    no other replica ever presents the same refresh token while this one may still."""
    a, b = replicas
    cancelled = asyncio.Event()

    async def hangs(held: TokenSnapshot) -> RefreshOutcome:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        raise AssertionError("never answered")

    on_a = connections(a, refresh_timeout_s=0.3).tokens(ALICE, "files", hangs)
    await on_a.store(snapshot(1, 5), actor="U1")
    before = await a.client.hgetall(token_key(a))

    assert await on_a.fresh() == Unavailable("timeout")

    assert cancelled.is_set()
    assert await a.client.hgetall(token_key(a)) == before
    assert not await a.client.exists(a.keys.oauth_refresh("T1", "U1", "files", issuer_id(ISSUER)))
    server = AuthorizationServer()
    refreshed = await connections(b).tokens(ALICE, "files", server.refresh).fresh()
    assert isinstance(refreshed, Held) and refreshed.ver == 2 and server.calls == 1


def test_a_refresh_is_bounded_below_the_locks_life() -> None:
    assert 0 < REFRESH_TIMEOUT_S < LOCK_TIMEOUT_S
    with pytest.raises(ValueError, match="before its lock lapses"):
        Connections(None, Keys("x:"), Sealer(KEY), None, refresh_timeout_s=LOCK_TIMEOUT_S)  # type: ignore[arg-type]


async def test_a_disconnect_waits_for_a_refresh_under_way_and_revokes_its_tokens(
    replicas: tuple[State, State], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refreshes (its authorization server slow) while B disconnects the person: B waits
    for A's refresh, then revokes the rotated tokens it wrote, and forgets them."""
    a, b = replicas
    slow = AuthorizationServer()
    slow.go_on = asyncio.Event()
    on_a = connections(a).tokens(ALICE, "files", slow.refresh)
    await on_a.store(snapshot(1, 5), actor="U1")
    refreshing = asyncio.create_task(on_a.fresh())
    await asyncio.wait_for(slow.started.wait(), 10)  # A holds the refresh lock

    revoked: list[str | None] = []

    async def revoke(held: TokenSnapshot) -> RevokeOutcome:
        revoked.append(held.token.refresh_token)
        return Revoked()

    asks_for_the_lock = asyncio.Event()
    lock = b.client.lock

    def watched_lock(*args: Any, **kwargs: Any) -> Any:
        asks_for_the_lock.set()
        return lock(*args, **kwargs)

    monkeypatch.setattr(b.client, "lock", watched_lock)
    on_b = connections(b)
    sign_ins = SignIns(
        b.client,
        b.keys,
        Sealer(KEY),
        OAuthConfig(),
        b.threads.approvals,
        b.shared.audit,
        lambda account, server: on_b.tokens(account, server, slow.refresh),
        b.handle.replication,
        revoke=revoke,
    )
    disconnecting = asyncio.create_task(sign_ins.disconnect(ALICE, "files", actor="U1"))
    asking = asyncio.create_task(asks_for_the_lock.wait())
    await asyncio.wait({disconnecting, asking}, return_when=asyncio.FIRST_COMPLETED)
    asking.cancel()
    slow.go_on.set()  # A's refresh comes back with rotated tokens

    refreshed = await refreshing
    assert isinstance(refreshed, Held) and refreshed.snapshot.token.refresh_token == "rt-secret-2"
    done = await disconnecting
    assert done.connected and isinstance(done.revoked, Revoked)
    assert revoked == ["rt-secret-2"]  # the tokens A wrote, not the ones they replaced
    assert await on_b.connections(ALICE) == []
    assert not await b.client.exists(token_key(b))


@pytest.mark.cluster
async def test_a_new_process_knows_the_expiry_another_wrote(
    make_state: Callable[..., State],
) -> None:
    server = AuthorizationServer()
    writer = connections(make_state()).tokens(ALICE, "files", server.refresh)
    written = await writer.store(snapshot(1, 3600), actor="U1")
    restarted = make_state()
    fresh_process = connections(restarted).tokens(ALICE, "files", server.refresh)
    read = await fresh_process.current()
    assert read is not None and read.snapshot.expires_at == written.snapshot.expires_at
    assert read.snapshot.token.access_token == "at-secret-1"
    assert float(await restarted.client.hget(token_key(restarted), "exp")) == pytest.approx(
        written.snapshot.expires_at
    )
    assert await fresh_process.fresh() == read and server.calls == 0

    await writer.store(snapshot(1, 5), actor="U1")  # reconnected: 5 s of life
    another = connections(make_state()).tokens(ALICE, "files", server.refresh)
    refreshed = await another.fresh()
    assert isinstance(refreshed, Held) and refreshed.ver == 3 and server.calls == 1


class CountingSealer(Sealer):
    opened = 0

    def open(self, sealed: str, aad: bytes) -> bytes:
        self.opened += 1
        return super().open(sealed, aad)


@pytest.mark.cluster
async def test_a_token_is_opened_only_when_its_version_changed(
    replicas: tuple[State, State],
) -> None:
    a, b = replicas
    server = AuthorizationServer()
    await connections(a).tokens(ALICE, "files", server.refresh).store(snapshot(1, 3600), actor="U1")
    sealer = CountingSealer(KEY)
    reader = connections(b, sealer).tokens(ALICE, "files", server.refresh)
    for _ in range(3):
        assert isinstance(await reader.fresh(), Held)
    assert sealer.opened == 1
    refreshed = await connections(a).tokens(ALICE, "files", server.refresh).fresh(after_401_of=1)
    assert isinstance(refreshed, Held) and refreshed.ver == 2
    again = await reader.fresh()
    assert isinstance(again, Held) and again.snapshot.token.access_token == "at-secret-2"
    assert sealer.opened == 2


@pytest.mark.cluster
async def test_connecting_again_replaces_the_connection_and_forgetting_audits_once(
    state: State,
) -> None:
    server = AuthorizationServer()
    store = connections(state)
    files = store.tokens(ALICE, "files", server.refresh)
    await files.store(snapshot(1, 3600), actor="U1")
    await store.tokens(Account("T1", "U2"), "files", server.refresh).store(
        snapshot(2, 3600), actor="U2"
    )

    # Another issuer now (the server moved to another authorization server).
    moved = await files.store(snapshot(3, 3600, OTHER_ISSUER), actor="U1")
    assert moved.ver == 2  # one more than the connection it replaces
    assert not await state.client.exists(token_key(state, issuer=ISSUER))
    [mine] = await store.connections(ALICE)
    assert (mine.server, mine.issuer, mine.scope) == ("files", OTHER_ISSUER, "files:read")
    assert mine == Connection("files", OTHER_ISSUER, mine.since, "files:read")
    assert time.time() - mine.since < 60
    team = await store.team_connections("T1")
    assert [(c.user, c.server, c.issuer) for c in team] == [
        ("U1", "files", OTHER_ISSUER),
        ("U2", "files", ISSUER),
    ]
    assert all(isinstance(c, TeamConnection) for c in team)
    held = await files.fresh()
    assert isinstance(held, Held) and held.snapshot.issuer == OTHER_ISSUER

    assert await files.forget(actor="UADMIN")
    assert await files.forget(actor="UADMIN") is False
    assert await files.fresh() == Gone()
    assert [(c.user, c.server) for c in await store.team_connections("T1")] == [("U2", "files")]
    entries = [e for e in await state.shared.audit.latest(20) if e.kind is AuditKind.CONNECTION]
    assert [(e.action, e.actor, e.detail["user"]) for e in entries] == [
        ("disconnected", "UADMIN", "U1"),
        ("connected", "U1", "U1"),
        ("connected", "U2", "U2"),
        ("connected", "U1", "U1"),
    ]


@pytest.mark.cluster
async def test_a_connection_stored_meanwhile_is_replaced_not_left_behind(state: State) -> None:
    server = AuthorizationServer()
    store, elsewhere = connections(state), connections(state)
    step = store.store_step

    async def interleaved(keys: Sequence[str] = (), args: Sequence[Any] = ()) -> Any:
        if not await state.client.exists(token_key(state, issuer=OTHER_ISSUER)):
            # Another replica connects the person (to another issuer) just before this step.
            other = elsewhere.tokens(ALICE, "files", server.refresh)
            await other.store(snapshot("o", 3600, OTHER_ISSUER), actor="U1")
        return await step(keys=keys, args=args)

    store.store_step = interleaved  # type: ignore[assignment]
    held = await store.tokens(ALICE, "files", server.refresh).store(snapshot(1, 3600), actor="U1")

    assert held.ver == 2  # after the one it replaced
    assert not await state.client.exists(token_key(state, issuer=OTHER_ISSUER))
    [mine] = await store.connections(ALICE)
    assert mine.issuer == ISSUER
    reader = connections(state).tokens(ALICE, "files", server.refresh)
    assert await reader.current() == held


@pytest.mark.cluster
async def test_records_of_one_issuer_refuse_a_token_of_another(state: State) -> None:
    server = AuthorizationServer()
    pinned = connections(state).tokens(ALICE, "files", server.refresh, issuer=ISSUER)
    with pytest.raises(ValueError, match="another issuer"):
        await pinned.store(snapshot(1, 3600, OTHER_ISSUER), actor="U1")
    await pinned.store(snapshot(1, 3600), actor="U1")
    assert isinstance(await pinned.fresh(), Held)


@pytest.mark.cluster
async def test_a_token_sealed_with_another_key_is_unavailable_not_gone(state: State) -> None:
    server = AuthorizationServer()
    await (
        connections(state)
        .tokens(ALICE, "files", server.refresh)
        .store(snapshot(1, 3600), actor="U1")
    )
    other = Sealer(bytes(range(50, 82)))
    # A replica with the wrong key must not ask people to connect again (their new tokens
    # would be sealed with that key): the token is unavailable there, and kept.
    assert await connections(state, other).tokens(ALICE, "files", server.refresh).fresh() == (
        Unavailable("key")
    )
    rotated = Sealer(bytes(range(50, 82)), previous=KEY)
    assert isinstance(
        await connections(state, rotated).tokens(ALICE, "files", server.refresh).fresh(), Held
    )


@pytest.mark.cluster
async def test_a_client_registration_is_kept_sealed_per_server_and_redirect(
    replicas: tuple[State, State],
) -> None:
    a, b = replicas
    info = OAuthClientInformationFull(
        client_id="client-9", client_secret="cs-secret-9", redirect_uris=[REDIRECT]
    )
    mine = ClientRecords(a.client, a.keys, Sealer(KEY), "files", REDIRECT)
    assert await mine.get_client_info() is None
    await mine.set_client_info(info)
    read = ClientRecords(b.client, b.keys, Sealer(KEY), "files", REDIRECT)
    assert await read.get_client_info() == info
    elsewhere = ClientRecords(b.client, b.keys, Sealer(KEY), "files", REDIRECT + "2")
    assert await elsewhere.get_client_info() is None
    # A registration copied onto another server's record does not open there.
    sealed = await a.client.get(a.keys.oauth_client("files", REDIRECT))
    assert "cs-secret" not in sealed
    await a.client.set(a.keys.oauth_client("mail", REDIRECT), sealed)
    mail = ClientRecords(a.client, a.keys, Sealer(KEY), "mail", REDIRECT)
    assert await mail.get_client_info() is None


@pytest.mark.cluster
async def test_nothing_in_redis_holds_a_token_or_secret_in_plain_text(
    state: State, key_prefix: str
) -> None:
    server = AuthorizationServer()
    store = connections(state)
    files = store.tokens(ALICE, "files", server.refresh)
    await files.store(snapshot(1, 5), actor="U1")
    assert isinstance(await files.fresh(), Held)  # refreshed: a second sealed token
    await store.tokens(ALICE, "mail", server.refresh).store(snapshot("m", 3600), actor="U1")
    clients = ClientRecords(state.client, state.keys, Sealer(KEY), "files", REDIRECT)
    await clients.set_client_info(snapshot(1, 5).client_info)
    server.refuse_with = "invalid_grant"
    assert await store.tokens(ALICE, "mail", server.refresh).fresh(after_401_of=1) == Gone()

    values: list[str] = []
    keys = [key async for key in state.client.scan_iter(match=f"{key_prefix}*")]
    assert len(keys) >= 5  # tokens, conns, team conns, client, audit
    for key in keys:
        kind = await state.client.type(key)
        if kind == "hash":
            values += [f"{k}={v}" for k, v in (await state.client.hgetall(key)).items()]
        elif kind == "string":
            values.append(await state.client.get(key))
        elif kind == "stream":
            values += [str(entry) for entry in await state.client.xrange(key)]
        else:
            raise AssertionError(f"{key} is a {kind}: read it here too")
        values.append(key)
    text = json.dumps(values, default=str)
    assert "files:read" in text and "v1." in text  # what lists it, and the sealed blobs
    for secret in SECRETS:
        assert secret not in text


async def test_every_write_waits_for_a_replica(state: State) -> None:
    """On the shared Redis, which no replica follows: each write is made, then refused as
    unconfirmed, as a failover could lose it (the refresh's write too: its caller is told the
    token is unavailable, not handed a token Redis may forget)."""
    assert (await state.client.info("replication"))["connected_slaves"] == 0
    unconfirmed = Replication(1, timeout_ms=20)
    store = Connections(state.client, state.keys, Sealer(KEY), state.shared.audit, unconfirmed)
    server = AuthorizationServer()
    files = store.tokens(ALICE, "files", server.refresh)
    with pytest.raises(NotReplicated):
        await files.store(snapshot(1, 5), actor="U1")
    assert await state.client.hget(token_key(state), "ver") == "1"  # made, not confirmed
    assert await files.fresh() == Unavailable("redis")
    assert server.calls == 1 and await state.client.hget(token_key(state), "ver") == "2"
    with pytest.raises(NotReplicated):
        await files.forget(actor="U1")
    assert not await state.client.exists(token_key(state))
    clients = ClientRecords(
        state.client, state.keys, Sealer(KEY), "files", REDIRECT, replication=unconfirmed
    )
    with pytest.raises(NotReplicated):
        await clients.set_client_info(snapshot(1, 5).client_info)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_redis_out_of_reach_is_unavailable_not_gone() -> None:
    client = redis.Redis(port=free_port(), decode_responses=True, retry=Retry(NoBackoff(), 0))
    try:
        store = Connections(client, Keys("test:down:"), Sealer(KEY), AuditLog(client, Keys("x:")))
        server = AuthorizationServer()
        assert await store.tokens(ALICE, "files", server.refresh).fresh() == Unavailable("redis")
        assert server.calls == 0
    finally:
        await client.aclose()
