"""``BotOAuthProvider``: the SDK's OAuth client, with its tokens from a ``PersonTokens`` and its
sign-in stopped where a person would be needed.

The SDK's ``OAuthClientProvider`` runs the whole flow in one coroutine: discovery,
registration (dynamic, a client ID metadata document, or a pre-registered client), scope
choice and step-up, PKCE, ``resource``, then it waits for the browser. This subclass keeps all
of that and changes two things:

- **Capture** (phase 1): the SDK's own ``_perform_authorization_code_grant`` runs with
  handlers that only record the URL it built; the request, its verifier and the context go to
  ``on_pending`` as a :class:`PendingAuthorization`, and the flow then waits until its session
  is closed. It never raises there: the SDK would log the error with its traceback and the
  transport would swallow it. Another process finishes the sign-in (``grants.py``).
- **Tokens**: before each request, under the SDK's lock, the person's token is loaded from
  ``PersonTokens.fresh()`` into the SDK's context (with its expiry, client and metadata, which
  the SDK never loads itself). A 401 to a request that carried it asks once for a newer one
  (``fresh(after_401_of=...)``: another process may have refreshed it, or it is refreshed now)
  and sends the request again; otherwise the 401 goes to the SDK, which discovers and
  captures. Every refresh goes through ``PersonTokens``, never the SDK's inline one.
- **Failures** (discovery, registration): what the SDK raises before it built a request is
  reported to ``on_failed`` as a :class:`FlowFailed` (a refusal or an outage, a fixed reason
  word, never the server's text), and the flow waits the same way, so the session ends at
  once rather than through the transport. The SDK's own "OAuth flow error" log record (a
  traceback whose text may quote the server) is dropped.

When ``PersonTokens`` cannot answer (``Unavailable``), the flow reports it to
``on_unavailable`` and waits the same way: a blip must not send a person to sign in again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth import (
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    TokenStorage,
)
from mcp.client.auth.utils import extract_field_from_www_auth, union_scopes
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.tokens import Freshness, Gone, Held, PersonTokens, TokenSnapshot, Unavailable

SDK_FLOW_LOGGER = "mcp.client.auth.oauth2"
SDK_FLOW_ERROR = "OAuth flow error"  # what the SDK logs, with its traceback, when a flow fails


class _NoFlowTraceback(logging.Filter):
    """Drops the SDK's "OAuth flow error" record: its traceback's text may quote the server,
    and the provider reports the failure itself (``on_failed``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != SDK_FLOW_ERROR


logging.getLogger(SDK_FLOW_LOGGER).addFilter(_NoFlowTraceback())


@dataclass(frozen=True)
class FlowFailed:
    """The SDK's flow failed before it built an authorization request. ``refused``: the
    authorization server said no or cannot be trusted (the person's sign-in fails); else it
    could not answer (5xx, 429: unavailable). ``reason`` is a fixed word: ``issuer`` (its
    metadata names another issuer), ``resource`` (the resource metadata names another
    server), ``registration`` (the registration was refused or unusable), ``discovery``
    (no authorization server found, or its answers are unusable), ``status_<code>``."""

    refused: bool
    reason: str


def flow_failure(exc: Exception, failing_status: int | None, found_metadata: bool) -> FlowFailed:
    """What the SDK's ``exc`` means, in words of our own. ``failing_status``: a 5xx or 429
    that a discovery or registration request of the flow got (an outage, whatever followed);
    ``found_metadata``: the authorization server's metadata was found."""
    if failing_status is not None:
        return FlowFailed(False, f"status_{failing_status}")
    text = str(exc)  # the SDK's sentence, only matched: it may quote the server
    if isinstance(exc, OAuthRegistrationError) and found_metadata:
        return FlowFailed(True, "registration")
    if isinstance(exc, OAuthFlowError) and "issuer mismatch" in text:
        return FlowFailed(True, "issuer")
    if isinstance(exc, OAuthFlowError) and text.startswith("Protected resource "):
        return FlowFailed(True, "resource")
    return FlowFailed(True, "discovery")


class ClientStore(Protocol):
    """Where a dynamic registration's result is kept (one per server and redirect URI)."""

    async def get_client_info(self) -> OAuthClientInformationFull | None: ...

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...


class _NoTokens:
    """A person with no token (a provider built only for its request builders)."""

    async def fresh(self, *, after_401_of: int | None = None) -> Freshness:
        return Gone()


class _Storage:
    """The SDK's ``TokenStorage`` for a provider: tokens come from ``PersonTokens`` (the SDK
    never loads them: the provider does, with their expiry), a token response is kept here
    for the caller, and the client comes from the pre-registered one or the client store."""

    def __init__(
        self, client_info: OAuthClientInformationFull | None, clients: ClientStore | None
    ) -> None:
        self.client_info = client_info
        self.clients = clients
        self.received: OAuthToken | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.received = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.client_info is not None:
            return self.client_info
        if self.clients is not None:
            return await self.clients.get_client_info()
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.clients is not None:
            await self.clients.set_client_info(client_info)


def _ignore(_: object) -> None:
    return None


def _step_up(response: httpx2.Response) -> bool:
    return (
        response.status_code == 403
        and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


class BotOAuthProvider(OAuthClientProvider):
    """An ``httpx2.Auth`` for one person's requests to one MCP server (see the module)."""

    def __init__(
        self,
        server_url: str,
        client_metadata: OAuthClientMetadata,
        tokens: PersonTokens,
        *,
        on_pending: Callable[[PendingAuthorization], object],
        on_unavailable: Callable[[Unavailable], object],
        on_failed: Callable[[FlowFailed], object] | None = None,
        client_info: OAuthClientInformationFull | None = None,
        clients: ClientStore | None = None,
        client_metadata_url: str | None = None,
        extra_scopes: str | None = None,
    ) -> None:
        """``on_failed``: told when discovery or registration fails (None: the SDK's exception
        goes on to the transport); ``client_info``: a pre-registered client (no registration
        then); ``clients``: where a dynamic registration is kept; ``client_metadata_url``:
        this client's metadata document (https), used where the authorization server
        supports them; ``extra_scopes``: added to the scopes the SDK chooses
        (space-separated)."""
        self._storage = _Storage(client_info, clients)
        super().__init__(
            server_url=server_url,
            client_metadata=client_metadata,
            storage=self._storage,
            client_metadata_url=client_metadata_url,
        )
        self.tokens = tokens
        self.on_pending = on_pending
        self.on_unavailable = on_unavailable
        self.on_failed = on_failed
        self.extra_scopes = extra_scopes
        self._held: Held | None = None  # the token loaded for the request in flight
        # Whether the response last handed to the SDK asked for more scope (set under the
        # SDK's lock, read by the capture of the same flow).
        self._step_up = False

    @classmethod
    def restored(
        cls, pending: PendingAuthorization, storage: TokenStorage | None = None
    ) -> BotOAuthProvider:
        """A provider whose context is ``pending``'s, for the code exchange in another
        process; a token response goes to ``storage`` when given."""
        provider = cls(
            pending.server_url,
            OAuthClientMetadata(redirect_uris=[AnyUrl(pending.redirect_uri)], scope=pending.scope),
            _NoTokens(),
            on_pending=_ignore,
            on_unavailable=_ignore,
            client_info=pending.client_info,
        )
        pending.restore(provider)
        if storage is not None:
            provider.context.storage = storage
        provider._initialized = True
        return provider

    @classmethod
    def for_snapshot(
        cls, snapshot: TokenSnapshot, server_url: str | None = None
    ) -> BotOAuthProvider:
        """A provider holding ``snapshot``, for its refresh and revocation requests.
        ``server_url`` matters only for a server that published no resource metadata."""
        resource = snapshot.protected_resource_metadata
        url = server_url or (str(resource.resource) if resource is not None else snapshot.issuer)
        redirect = (snapshot.client_info.redirect_uris or [AnyUrl("http://127.0.0.1/")])[0]
        provider = cls(
            url,
            OAuthClientMetadata(redirect_uris=[redirect], scope=snapshot.scope),
            _NoTokens(),
            on_pending=_ignore,
            on_unavailable=_ignore,
            client_info=snapshot.client_info,
        )
        provider._hold(snapshot)
        provider.context.protocol_version = snapshot.protocol_version
        provider._initialized = True
        return provider

    @property
    def received(self) -> OAuthToken | None:
        """The token the last token response gave (phase 2), if it went to this provider's own
        storage."""
        return self._storage.received

    def _hold(self, snapshot: TokenSnapshot) -> None:
        context = self.context
        context.current_tokens = snapshot.token
        context.token_expiry_time = snapshot.expires_at
        context.client_info = snapshot.client_info
        if snapshot.oauth_metadata is not None:
            context.oauth_metadata = snapshot.oauth_metadata
        if snapshot.protected_resource_metadata is not None:
            context.protected_resource_metadata = snapshot.protected_resource_metadata
        if snapshot.auth_server_url is not None:
            context.auth_server_url = snapshot.auth_server_url

    async def _load(self, freshness: Freshness) -> None:
        """Put the person's token (or its absence) into the SDK's context."""
        if isinstance(freshness, Unavailable):
            self._held = None
            self.on_unavailable(freshness)
            await anyio.sleep_forever()  # the session's owner closes the session
        if isinstance(freshness, Held):
            self._held = freshness
            self._hold(freshness.snapshot)
            return
        self._held = None
        self.context.clear_tokens()
        if self.context.client_info is None:
            self.context.client_info = await self._storage.get_client_info()

    async def _initialize(self) -> None:
        """The SDK calls this under its lock before each request (see ``_auth_flow``)."""
        await self._load(await self.tokens.fresh())
        self._initialized = True

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # The SDK loads storage only when not initialized, under its lock: so it loads the
        # person's token for every request, one request at a time.
        self._initialized = False
        flow = super()._auth_flow(request)
        failing: int | None = None  # a 5xx or 429 to one of the flow's own requests
        try:
            outgoing = await flow.__anext__()
            held, retried = self._held, False
            while True:
                response = yield outgoing
                if outgoing is request:
                    if response.status_code == 401 and held is not None and not retried:
                        retried = True
                        newer = await self.tokens.fresh(after_401_of=held.ver)
                        if isinstance(newer, Held) and newer.ver != held.ver:
                            await self._load(newer)
                            held = newer
                            self._add_auth_header(request)
                            response = yield request
                        elif not isinstance(newer, Held):
                            await self._load(newer)
                    self._step_up = _step_up(response)
                elif response.status_code >= 500 or response.status_code == 429:
                    failing = response.status_code
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except Exception as exc:  # discovery or registration failed (the SDK raised)
            if self.on_failed is None:
                raise
            found = self.context.oauth_metadata is not None
            self.on_failed(flow_failure(exc, failing, found))
            await anyio.sleep_forever()  # the session's owner closes the session
        finally:
            await flow.aclose()

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        """Let the SDK build the authorization request, record it, and wait (never return)."""
        seen: dict[str, str] = {}

        async def redirect(url: str) -> None:
            seen["url"] = url

        async def callback() -> AuthorizationCodeResult:
            # Stands in for the browser so the SDK returns its verifier; the real response's
            # state and iss are checked when the code comes back (grants.py).
            state = parse_qs(urlsplit(seen["url"]).query)["state"][0]
            metadata = self.context.oauth_metadata
            iss = str(metadata.issuer) if metadata is not None else None
            return AuthorizationCodeResult(code="-", state=state, iss=iss)

        context = self.context
        context.client_metadata.scope = union_scopes(
            context.client_metadata.scope, self.extra_scopes
        )
        context.redirect_handler, context.callback_handler = redirect, callback
        _, verifier = await super()._perform_authorization_code_grant()
        pending = PendingAuthorization.capture(
            context, seen["url"], verifier, step_up=self._step_up
        )
        self.on_pending(pending)
        await anyio.sleep_forever()  # the session's owner closes the session
        raise AssertionError("unreachable")  # pragma: no cover
