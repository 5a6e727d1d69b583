"""Starting and finishing a person's sign-in to an MCP server, across replicas (``SignIns``).

A sign-in starts where a call (or ``/agent connect``, or the console) needs it: the SDK has
built the authorization request (``PendingAuthorization``), and :meth:`SignIns.begin` keeps it
sealed in Redis under the SHA-256 of its OAuth state (``Keys.oauth_flow``, with whose it is,
for which server, the request waiting on it and whether the person is from another
workspace), and adds the waiting request to ``Keys.oauth_waiting``. The person gets the
start link ``<redirect_base_url>/oauth/start?state=...``, and nobody else.

Then any replica answers the browser (``bot/oauth/web.py``):

- ``GET /oauth/start`` spends nothing (a link scanner spends nothing): a page naming whose
  Slack account gets the connection, with a Continue button; the page's form carries a nonce
  that the answer also sets as a cookie (``slack_agent_start``: HttpOnly, SameSite=Strict,
  Path=/oauth, Secure on https, for 10 minutes at most; a browser that has one keeps it).
- ``POST /oauth/start`` must come from that page in that browser: the form's nonce and the
  cookie's, both present and equal (a site that makes a browser post a state it knows has
  neither: a SameSite=Strict cookie is not sent with another site's request), no
  ``Sec-Fetch-Site`` of ``cross-site`` or ``same-site``, and no ``Origin`` but the start
  link's own (``Origin: null`` says nothing: browsers send it for the page's own form, which
  is served ``no-referrer``). Otherwise 403, audited ``callback_refused``/``cross_site``.
  Then it spends the link once (Lua ``START_ONCE``): the browser gets a cookie
  (``slack_agent_signin``: a nonce, HttpOnly, SameSite=Lax, Path=/oauth, Secure on https,
  as long as the flow lives; the flow keeps only its hash) and a 303 to the authorization
  server. A second POST is refused (409).
- ``GET /oauth/callback``: an unknown state is refused (400); a browser without the cookie
  that started it is refused (403): what stops a callback made for someone else's state;
  the callback finishes once (Lua ``FINISH_ONCE``: a reload is 409, and the authorization
  server sees one token request), and the flow's sealed part is deleted then (what is left
  until it expires says only that it was finished, and how: its ``end`` field). ``error=``
  decides the waiting requests denied (reason ``declined``). Otherwise the code is exchanged
  here (``grants.complete_authorization``: the ``iss`` check, the token request), the token
  stored sealed with its audit entry (``TokenRecords.store``), the waiting set taken, and
  each waiting request decided approved, which wakes its turn on whichever replica claims
  it. An exchange that fails decides them denied at once, with the reason ``failed`` (the
  authorization server refused, or its answer failed a check) or ``unavailable`` (it could
  not be reached): the gate tells the model so, and the person can try again.

Every refusal is audited (``connection``/``callback_refused``, with a reason word) and every
callback counted (``slack_agent_oauth_callbacks_total{outcome}``), as is a start refused as
cross-site. No state, code, verifier, nonce, cookie or token is ever in a page (but the start
page's own form), a log line or the audit.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ValidationError

from bot.oauth import pages
from bot.oauth.config import CALLBACK_PATH, OAuthConfig
from bot.oauth.crypto import Sealer, Unreadable, flow_aad
from bot.oauth.pages import START_PATH, Page
from bot.oauth.records import REFRESH_TIMEOUT_S, KeyNotHeld, TokenRecords
from bot.observability.metrics import OAUTH_CALLBACKS, safely
from bot.state.audit import AuditEntry, AuditKind, AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication
from bot.turn.store.approvals import (
    SIGNIN_DECLINED,
    SIGNIN_FAILED,
    SIGNIN_UNAVAILABLE,
    Approvals,
)
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.grants import (
    GrantRefused,
    GrantUnavailable,
    NotRevocable,
    RevokeFailed,
    RevokeOutcome,
    complete_authorization,
)
from tools.mcp.oauth.grants import revoke as revoke_tokens
from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.tokens import TokenSnapshot

log = logging.getLogger(__name__)

COOKIE = "slack_agent_signin"  # binds a started sign-in to the browser (SameSite=Lax)
START_COOKIE = "slack_agent_start"  # the start page's nonce, its form's twin (SameSite=Strict)
COOKIE_PATH = "/oauth"
START_COOKIE_MAX_S = 600  # the start page's nonce is kept this long at most
NONCE_FIELD = "nonce"  # the start page's form field with the nonce
CLIENT_DOCUMENT_PATH = "/oauth/client.json"
AFTER_DEADLINE_S = 120  # a flow is kept this long past its request's deadline
WAITING_EXTRA_S = 3600  # a waiting set is kept this long past its request's deadline
NONCE_BYTES = 32
MIN_NONCE_CHARS = 40  # a cookie shorter than a nonce of ours is not reused
POLL_S = 0.25  # how often wait_finished looks
CLIENT_NAME = "slack-agent"  # this client's name at authorization servers
ALLOWED_FETCH_SITES = ("same-origin", "none")  # Sec-Fetch-Site values a start POST may have

# KEYS: the flow; ARGV: the hash of the browser's nonce.
# Binds the flow to one browser, once: 1; 0 when it was started before; -1 when gone.
START_ONCE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local started = redis.call('HGET', KEYS[1], 'started')
if started and started ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'started', '1', 'browser', ARGV[1])
return 1
"""

# KEYS: the flow. Finishes it once: 1; 0 when it was finished before; -1 when gone.
FINISH_ONCE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local done = redis.call('HGET', KEYS[1], 'done')
if done and done ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'done', '1')
return 1
"""

# KEYS: the flow; ARGV: how it ended. Says so on a flow still kept (never makes one again).
SET_END = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'end', ARGV[1])
return 1
"""

# KEYS: a waiting set. Takes it whole: its members, and it is gone.
TAKE_WAITING = """
local ids = redis.call('SMEMBERS', KEYS[1])
redis.call('DEL', KEYS[1])
return ids
"""

CallbackOutcome = Literal[
    "connected",
    "declined",
    "unknown_state",
    "other_browser",
    "reload",
    "refused",
    "unavailable",
    "cross_site",
]
# How a finished flow ended (its ``end`` field), what the console's wait reads.
End = Literal["connected", "declined", "failed", "unavailable"]
ENDS: dict[str, End] = {end: end for end in get_args(End)}
Revoke = Callable[[TokenSnapshot], Awaitable[RevokeOutcome]]


class Outsider(Exception):
    """A person from another workspace, where ``oauth.allow_external`` is off."""

    def __init__(self, server: str) -> None:
        self.server = server
        super().__init__(f"People from other workspaces cannot connect {server} here.")


class Flow(BaseModel):
    """A sign-in under way, as sealed in Redis (the pending request holds its secrets)."""

    v: Literal[1] = 1
    pending: PendingAuthorization
    team: str
    user: str
    server: str
    request_id: str | None = None  # the sign-in request waiting on it (None: /agent connect)
    external: bool = False
    deadline: float  # epoch seconds: the start link is spent or dead after this
    secure: bool = True  # the start link is https: the browser's cookie is Secure
    origin: str = ""  # the start link's origin (""; a flow of an earlier version: the config's)

    @property
    def account(self) -> Account:
        return Account(self.team, self.user)


@dataclass(frozen=True)
class Cookie:
    """A cookie to set: a nonce (a secret: never logged), how long it is kept, and whether
    another site's requests carry it (``Lax``: top-level navigations do; ``Strict``: never)."""

    value: str
    max_age: int
    secure: bool
    name: str = COOKIE
    samesite: Literal["Lax", "Strict"] = "Lax"

    def __repr__(self) -> str:
        return f"Cookie({self.name}, max_age={self.max_age}, secure={self.secure})"


@dataclass(frozen=True)
class Posted:
    """What a browser sent with ``POST /oauth/start`` (the state and nonces are secrets)."""

    state: str
    nonce: str = ""  # the form's
    start_cookie: str | None = None  # the start page's cookie
    cookie: str | None = None  # a browser nonce of ours it has already
    fetch_site: str | None = None  # Sec-Fetch-Site
    origin: str | None = None  # Origin

    def __repr__(self) -> str:
        return f"Posted(fetch_site={self.fetch_site!r}, origin={self.origin!r})"


@dataclass(frozen=True)
class Answer:
    """What the browser is answered: a page, or a 303 to ``location``; and a cookie to set."""

    page: Page
    location: str | None = None
    cookie: Cookie | None = None

    def __repr__(self) -> str:  # the location carries a state
        return f"Answer(status={self.page.status}, redirect={self.location is not None})"


@dataclass(frozen=True)
class Disconnected:
    """What ``disconnect`` did: whether there was a connection (now forgotten), and what the
    authorization server said to the revocation (None: nothing was revoked)."""

    server: str
    connected: bool
    revoked: RevokeOutcome | None
    issuer: str = ""


@dataclass(frozen=True)
class Naming:
    """How the start page names the person and the workspace."""

    person: str
    workspace: str


Describe = Callable[[Account], Awaitable[Naming]]


async def plain_names(account: Account) -> Naming:
    """Without Slack (the console, tests): the IDs themselves."""
    return Naming(f"Slack user {account.user}", f"workspace {account.team}")


def digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def _hash(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


def origin_of(url: str) -> str:
    """A URL's origin as a browser's ``Origin`` header writes it (scheme, host, a port only
    when not the scheme's own)."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is None or (scheme, port) in (("https", 443), ("http", 80)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _ours(nonce: str | None) -> str | None:
    """A nonce a browser sent back, if it can be one of ours."""
    return nonce if nonce and len(nonce) >= MIN_NONCE_CHARS else None


class SignIns:
    """Sign-ins under way in one Redis, shared by every replica (see the module)."""

    def __init__(
        self,
        client: Redis,
        keys: Keys,
        sealer: Sealer,
        config: OAuthConfig,
        approvals: Approvals,
        audit: AuditLog,
        tokens_for: Callable[[Account, str], TokenRecords],
        replication: Replication | None = None,
        *,
        describe: Describe = plain_names,
        client_name: str = CLIENT_NAME,
        command: str = "/agent",
        revoke: Revoke = revoke_tokens,
    ) -> None:
        """``tokens_for``: a person's token records for a server (what a callback stores
        into, what a disconnect forgets); ``describe``: how the start page names the person
        (the Slack side sets it); ``command``: the slash command the pages point at;
        ``revoke``: how a disconnect revokes tokens (``grants.revoke``)."""
        self.client = client
        self.keys = keys
        self.sealer = sealer
        self.config = config
        self.approvals = approvals
        self.audit = audit
        self.tokens_for = tokens_for
        self.describe = describe
        self.client_name = client_name
        self.command = command
        self.revoke = revoke
        replication = replication or Replication()
        self._start_once = replication.register(client, START_ONCE)
        self._finish_once = replication.register(client, FINISH_ONCE)
        self._take_waiting = replication.register(client, TAKE_WAITING)
        self._set_end = replication.register(client, SET_END)

    # --- starting ----------------------------------------------------------------------------

    def start_url(self, state: str, base_url: str | None = None) -> str:
        """``<oauth.redirect_base_url>/oauth/start?state=<state>`` (``base_url`` instead of
        the configured one: the console's loopback site)."""
        base = (base_url or self.config.redirect_base_url or "").rstrip("/")
        if not base:
            raise ValueError("oauth.redirect_base_url is not set")
        return f"{base}{START_PATH}?state={quote(state, safe='')}"

    async def begin(
        self,
        account: Account,
        server: str,
        pending: PendingAuthorization,
        *,
        request_id: str | None,
        external: bool,
        ttl_s: float,
        base_url: str | None = None,
    ) -> str:
        """Keep ``pending`` sealed for ``ttl_s`` (and 120 s more, for a person on the
        consent screen at the deadline), ``request_id`` waiting on the connection; the start
        link. Raises :class:`Outsider` for a person of another workspace unless
        ``oauth.allow_external`` (the callers refuse first; this is the second look)."""
        if external and not self.config.allow_external:
            raise Outsider(server)
        url = self.start_url(pending.state, base_url)
        now = time.time()
        flow = Flow(
            pending=pending,
            team=account.team,
            user=account.user,
            server=server,
            request_id=request_id,
            external=external,
            deadline=now + ttl_s,
            secure=urlsplit(url).scheme == "https",
            origin=origin_of(url),
        )
        key = self.keys.oauth_flow(pending.state)
        sealed = self.sealer.seal(flow.model_dump_json().encode(), flow_aad(digest(pending.state)))
        kept_s = math.ceil(ttl_s) + AFTER_DEADLINE_S
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "ct": sealed,
                    "started": "",
                    "browser": "",
                    "done": "",
                    "end": "",
                    "user": account.user,  # for the audit of a refusal (no secret)
                    "server": server,
                },
            )
            pipe.expire(key, kept_s)
            await pipe.execute()
        if request_id is not None:
            waiting = self.keys.oauth_waiting(account.team, account.user, server)
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.sadd(waiting, request_id)
                pipe.expire(waiting, math.ceil(ttl_s) + WAITING_EXTRA_S)
                await pipe.execute()
        return url

    async def _flow(self, state: str) -> tuple[Flow, dict[str, str]] | None:
        """The flow ``state`` names and its plain fields; None: unknown, gone or unreadable."""
        if not state:
            return None
        data: dict[str, str] = await self.client.hgetall(self.keys.oauth_flow(state))
        if not data or not data.get("ct"):
            return None
        try:
            plain = self.sealer.open(data["ct"], flow_aad(digest(state)))
            return Flow.model_validate_json(plain), data
        except Unreadable as error:
            log.warning("a sign-in under way does not open (%s)", error.reason)
        except ValidationError:
            log.warning("a sign-in under way is not one this version reads")
        return None

    async def start_page(self, state: str, start_cookie: str | None = None) -> Answer:
        """``GET /oauth/start``: whose connection, and a Continue button; spends nothing.
        The form carries the browser's start nonce (``start_cookie`` when it has one of
        ours, else a new one), and the answer sets it as the start cookie."""
        found = await self._flow(state)
        if found is None:
            await self._refused("", "", "unknown", "start")
            return Answer(pages.expired())
        flow, _ = found
        left = flow.deadline - time.time()
        if left <= 0:
            await self._refused(flow.user, flow.server, "expired", "start")
            return Answer(pages.expired())
        names = await self._names(flow.account)
        nonce = _ours(start_cookie) or secrets.token_urlsafe(NONCE_BYTES)
        cookie = Cookie(
            nonce,
            max(min(START_COOKIE_MAX_S, math.ceil(left)), 1),
            flow.secure,
            name=START_COOKIE,
            samesite="Strict",
        )
        page = pages.start(flow.server, names.person, names.workspace, state, nonce)
        return Answer(page, cookie=cookie)

    async def start(self, posted: Posted) -> Answer:
        """``POST /oauth/start``: only from the start page shown in this browser (see the
        module); then bind the flow to this browser, once, and send it to the authorization
        server. A browser that has a nonce of ours keeps it (two sign-ins at once in one
        browser both finish)."""
        state = posted.state
        found = await self._flow(state)
        if found is None:
            await self._refused("", "", "unknown", "start")
            return Answer(pages.expired())
        flow, _ = found
        remaining = flow.deadline + AFTER_DEADLINE_S - time.time()
        if time.time() >= flow.deadline:
            await self._refused(flow.user, flow.server, "expired", "start")
            return Answer(pages.expired())
        check = self._cross_site(flow, posted)
        if check is not None:
            detail = {"user": flow.user, "at": "start", "check": check}
            await self._audit(flow.user, "callback_refused", flow.server, "cross_site", detail)
            count("cross_site")
            return Answer(pages.not_from_start_page())
        nonce = _ours(posted.cookie) or secrets.token_urlsafe(NONCE_BYTES)
        bound = int(await self._start_once(keys=[self.keys.oauth_flow(state)], args=[_hash(nonce)]))
        if bound == -1:
            await self._refused(flow.user, flow.server, "unknown", "start")
            return Answer(pages.expired())
        if bound == 0:
            await self._refused(flow.user, flow.server, "started_before", "start")
            return Answer(pages.opened_elsewhere())
        return Answer(
            Page(303, ""),
            location=flow.pending.authorization_url,
            cookie=Cookie(nonce, max(int(remaining), 1), flow.secure),
        )

    def _cross_site(self, flow: Flow, posted: Posted) -> str | None:
        """Which check a start POST fails (None: it came from the start page in this
        browser): ``fetch_site``, ``origin`` or ``nonce``."""
        fetch_site = (posted.fetch_site or "").strip().lower()
        if fetch_site and fetch_site not in ALLOWED_FETCH_SITES:
            return "fetch_site"
        origin = (posted.origin or "").strip().lower()
        expected = flow.origin or origin_of(self.config.redirect_base_url or "")
        if origin and origin != "null" and origin != expected:
            return "origin"
        form, cookie = _ours(posted.nonce), _ours(posted.start_cookie)
        if form is None or cookie is None:
            return "nonce"
        if not hmac.compare_digest(form.encode(), cookie.encode()):
            return "nonce"
        return None

    async def _names(self, account: Account) -> Naming:
        try:
            return await self.describe(account)
        except Exception as exc:  # Slack away: the IDs still say whose
            log.warning("the sign-in page could not name the person (%s)", type(exc).__name__)
            return await plain_names(account)

    # --- finishing ---------------------------------------------------------------------------

    async def callback(self, query: Mapping[str, str], cookie: str | None) -> Answer:
        """``GET /oauth/callback``: finish the sign-in the state names (see the module)."""
        state = query.get("state", "")
        key = self.keys.oauth_flow(state)
        data: dict[str, str] = await self.client.hgetall(key) if state else {}
        if not data:
            return await self._callback_refused(
                "", "", "unknown_state", pages.unknown(), "unknown_state"
            )
        user, server = data.get("user", ""), data.get("server", "")
        browser = data.get("browser", "")
        if not browser or not cookie or not hmac.compare_digest(browser, _hash(cookie)):
            return await self._callback_refused(
                user, server, "other_browser", pages.other_browser(), "other_browser"
            )
        found = await self._flow(state) if not data.get("done") else None
        finished = int(await self._finish_once(keys=[key])) if found is not None else 0
        if finished != 1 or found is None:
            return await self._callback_refused(user, server, "reload", pages.finished(), "reload")
        flow, _ = found
        # Taken: its secrets (the verifier, the client) are no longer kept; what is left
        # says it was finished, until the flow would have expired.
        await self.client.hdel(key, "ct")
        if query.get("error"):
            return await self._declined(flow, query["error"])
        code = query.get("code", "")
        if not code:
            return await self._failed(flow, "no_code", "failed")
        try:
            snapshot = await complete_authorization(flow.pending, code, query.get("iss"))
        except GrantRefused as refused:
            return await self._failed(flow, refused.reason, "failed")
        except GrantUnavailable as away:
            return await self._failed(flow, away.reason, "unavailable")
        await self.tokens_for(flow.account, flow.server).store(snapshot, actor=flow.user)
        await self._decide_waiting(flow, approved=True)
        await self._ended(state, "connected")
        count("connected")
        return Answer(pages.connected(flow.server, late=time.time() >= flow.deadline))

    async def _declined(self, flow: Flow, error: str) -> Answer:
        await self._decide_waiting(flow, approved=False, reason=SIGNIN_DECLINED)
        await self._ended(flow.pending.state, "declined")
        word = (
            error if error in ("access_denied", "consent_required", "login_required") else "error"
        )
        await self._audit(flow.user, "signin_declined", flow.server, word, {"user": flow.user})
        count("declined")
        return Answer(pages.declined(flow.server))

    async def _failed(
        self, flow: Flow, reason: str, end: Literal["failed", "unavailable"]
    ) -> Answer:
        """The code was not exchanged (``reason``: a fixed word, for the audit): the waiting
        requests are decided denied now, so their turns tell the model at once."""
        await self._decide_waiting(
            flow, approved=False, reason=SIGNIN_FAILED if end == "failed" else SIGNIN_UNAVAILABLE
        )
        await self._ended(flow.pending.state, end)
        await self._refused(flow.user, flow.server, reason, "callback")
        if end == "failed":
            count("refused")
            return Answer(pages.failed(flow.server, self.command))
        count("unavailable")
        return Answer(pages.unavailable(flow.server, self.command))

    async def _ended(self, state: str, end: End) -> None:
        """Say on the finished flow how it ended (what the console's wait reads)."""
        await self._set_end(keys=[self.keys.oauth_flow(state)], args=[end])

    async def _decide_waiting(self, flow: Flow, *, approved: bool, reason: str = "") -> list[str]:
        """Take the waiting set and decide every request that waited (each wakes its turn;
        ``reason``: the word a denied one keeps): the ids decided."""
        waiting = self.keys.oauth_waiting(flow.team, flow.user, flow.server)
        taken = [str(i) for i in await self._take_waiting(keys=[waiting])]
        ids = list(dict.fromkeys([*taken, *([flow.request_id] if flow.request_id else [])]))
        for request_id in ids:
            await self.approvals.decide(
                request_id, approved, by=flow.user, reason="" if approved else reason
            )
        return ids

    async def _callback_refused(
        self,
        user: str,
        server: str,
        reason: str,
        page: Page,
        outcome: CallbackOutcome,
    ) -> Answer:
        await self._refused(user, server, reason, "callback")
        count(outcome)
        return Answer(page)

    async def _refused(self, user: str, server: str, reason: str, where: str) -> None:
        await self._audit(user, "callback_refused", server, reason, {"user": user, "at": where})

    async def _audit(
        self, actor: str, action: str, server: str, outcome: str, detail: dict[str, Any]
    ) -> None:
        await self.audit.add(
            AuditEntry(
                kind=AuditKind.CONNECTION,
                actor=actor,
                action=action,
                target=server,
                outcome=outcome,
                detail=detail,
            )
        )

    # --- for the console ---------------------------------------------------------------------

    async def wait_finished(self, state: str, timeout_s: float) -> End | None:
        """How the sign-in ``state`` names ended, once its callback has finished it
        (``connected``, ``declined``, ``failed``, ``unavailable``); None when it has not
        within ``timeout_s``."""
        key = self.keys.oauth_flow(state)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            end = ENDS.get(await self.client.hget(key, "end") or "")
            if end is not None:
                return end
            left = deadline - loop.time()
            if left <= 0:
                return None
            await asyncio.sleep(min(POLL_S, left))

    # --- disconnecting -----------------------------------------------------------------------

    async def disconnect(self, account: Account, server: str, *, actor: str) -> Disconnected:
        """Revoke the person's tokens at the authorization server (where it can), then forget
        the connection (``disconnected`` in the audit, and ``revoke_failed`` when the
        revocation failed: the bot forgets it all the same). Both under the connection's
        refresh lock: no refresh rotates the tokens meanwhile, leaving new ones unrevoked."""
        records = self.tokens_for(account, server)
        outcome: RevokeOutcome | None = None
        issuer = ""
        async with records.no_refresh():
            try:
                held = await records.current()
            except KeyNotHeld:
                held = None
                outcome = RevokeFailed("key")
            if held is not None:
                issuer = held.snapshot.issuer
                try:
                    async with asyncio.timeout(REFRESH_TIMEOUT_S):
                        outcome = await self.revoke(held.snapshot)
                except TimeoutError:
                    outcome = RevokeFailed("timeout")
            forgot = await records.forget(actor=actor)
        if not forgot:
            return Disconnected(server, False, None)
        if isinstance(outcome, RevokeFailed):
            await self._audit(
                actor, "revoke_failed", server, outcome.reason, {"user": account.user}
            )
        elif isinstance(outcome, NotRevocable):
            log.info("%s publishes no revocation endpoint: forgotten without revoking", server)
        return Disconnected(server, True, outcome, issuer)

    # --- the client ID metadata document -------------------------------------------------------

    def client_document(self) -> dict[str, Any] | None:
        """This client's metadata document (CIMD), served at ``/oauth/client.json``: its URL
        is its client ID. None without ``oauth.redirect_base_url``."""
        base = self.config.redirect_base_url
        if base is None:
            return None
        loopback = f"http://127.0.0.1:{self.config.console_port}{CALLBACK_PATH}"
        return {
            "client_id": base + CLIENT_DOCUMENT_PATH,
            "client_name": self.client_name,
            "redirect_uris": [base + CALLBACK_PATH, loopback],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "web",
        }


def count(outcome: CallbackOutcome) -> None:
    """Count a sign-in page answered (``slack_agent_oauth_callbacks_total``)."""
    safely(lambda: OAUTH_CALLBACKS.labels(outcome).inc())
