"""The token requests of a person's connection, each built and read by the SDK's own pieces:
the authorization code exchanged (phase 2 of a sign-in, in whichever process the callback
reaches), a token refreshed, a token revoked (RFC 7009).

Nothing here waits on a person or keeps anything: each call takes what it needs (a
``PendingAuthorization``, a ``TokenSnapshot``) and returns a result. What goes wrong becomes a
fixed kind with a fixed sentence and a reason word; the authorization server's own text
(which may quote a token or a code) is never passed on, logged or raised.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthTokenError
from mcp.client.auth.utils import validate_authorization_response_iss
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientMetadata, OAuthToken, TokenEndpointAuthMethod
from pydantic import AnyUrl, ValidationError

from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.provider import BotOAuthProvider
from tools.mcp.oauth.tokens import (
    Refreshed,
    RefreshOutcome,
    RefreshUnavailable,
    Refused,
    TokenSnapshot,
)

TIMEOUT_S = 30.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
# OAuth error codes (RFC 6749 5.2, RFC 8707) kept as a refusal's reason word; any other
# value the server sends reads as "refused".
ERROR_WORDS = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "invalid_target",
    }
)


class GrantError(Exception):
    """A token request that did not give a token. ``reason`` is a fixed word (for the audit
    and the logs); the message is a fixed sentence."""

    kind = "GrantError"
    sentence = "the token request failed"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{self.sentence} ({reason})")


class GrantRefused(GrantError):
    """The authorization server refused the sign-in, or its answer cannot be trusted (a wrong
    or missing ``iss``, a malformed token response): the person may try again."""

    kind = "GrantRefused"
    sentence = "the sign-in failed"


class GrantUnavailable(GrantError):
    """The authorization server could not be reached or failed (network, 5xx, 429)."""

    kind = "GrantUnavailable"
    sentence = "the sign-in service is unavailable right now"


@dataclass(frozen=True)
class Revoked:
    """The authorization server accepted the revocation of every token held."""


@dataclass(frozen=True)
class NotRevocable:
    """The authorization server publishes no revocation endpoint: the person revokes the
    access on its site."""


@dataclass(frozen=True)
class RevokeFailed:
    """The revocation request failed; ``reason`` is a fixed word (``network`` or
    ``status_<code>``)."""

    reason: str


RevokeOutcome = Revoked | NotRevocable | RevokeFailed


def client_metadata(
    redirect_uri: str,
    *,
    client_name: str,
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None,
    scope: str | None = None,
) -> OAuthClientMetadata:
    """The client metadata a redirect URI registers with: a web application for an https
    redirect, a native one for a loopback redirect (``slack-agent chat``)."""
    parts = urlsplit(redirect_uri)
    if parts.scheme == "https":
        application_type = "web"
    elif parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        application_type = "native"
    else:
        raise ValueError("a redirect URI is https, or http on a loopback address")
    return OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        client_name=client_name,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method=token_endpoint_auth_method,
        scope=scope,
        application_type=application_type,
    )


@contextlib.asynccontextmanager
async def _http() -> AsyncIterator[httpx2.AsyncClient]:
    async with create_mcp_http_client(timeout=httpx2.Timeout(TIMEOUT_S)) as http:
        yield http


def _error_word(response: httpx2.Response) -> str:
    """The OAuth error code of a refusal when it is a known one, else ``refused``."""
    try:
        error = json.loads(response.content).get("error")
    except (ValueError, AttributeError):
        return "refused"
    return error if isinstance(error, str) and error in ERROR_WORDS else "refused"


def _unavailable(status: int) -> bool:
    return status >= 500 or status == 429


async def complete_authorization(
    pending: PendingAuthorization, code: str, iss: str | None
) -> TokenSnapshot:
    """Phase 2 of a sign-in: the code the browser brought back exchanged for a token.

    ``iss`` is checked first (RFC 9207, the SDK's check: present and equal to the issuer, or
    absent where the server does not advertise it); the token request is the SDK's, with the
    verifier, redirect URI, client authentication and ``resource`` of the request that was
    captured. Raises :class:`GrantRefused` or :class:`GrantUnavailable`.
    """
    provider = BotOAuthProvider.restored(pending)
    try:
        validate_authorization_response_iss(iss, provider.context.oauth_metadata)
    except OAuthFlowError:
        raise GrantRefused("issuer") from None
    try:
        request = await provider._exchange_token_authorization_code(code, pending.code_verifier)
    except OAuthFlowError:
        raise GrantRefused("client") from None
    try:
        async with _http() as http:
            response = await http.send(request)
            await response.aread()
    except httpx2.HTTPError:
        raise GrantUnavailable("network") from None
    if _unavailable(response.status_code):
        raise GrantUnavailable(f"status_{response.status_code}")
    if response.status_code not in (200, 201):
        raise GrantRefused(_error_word(response))
    try:
        await provider._handle_token_response(response)
    except OAuthTokenError:
        raise GrantRefused("invalid_response") from None
    token = provider.context.current_tokens
    if token is None:  # pragma: no cover (the SDK sets it or raises)
        raise GrantRefused("invalid_response")
    return TokenSnapshot(
        issuer=pending.issuer,
        token=token,
        expires_at=provider.context.token_expiry_time,
        client_info=pending.client_info,
        oauth_metadata=pending.oauth_metadata,
        protected_resource_metadata=pending.protected_resource_metadata,
        auth_server_url=pending.auth_server_url,
        protocol_version=pending.protocol_version,
        scope=token.scope,
    )


async def refresh_grant(
    snapshot: TokenSnapshot, *, server_url: str | None = None
) -> RefreshOutcome:
    """The snapshot's token refreshed with the SDK's refresh request (the client that got it,
    the token endpoint discovered then, ``resource``).

    ``Refreshed`` carries the new snapshot (a refresh token or scope the server leaves out is
    carried forward, as the SDK does); ``Refused`` when the server refuses it (400, 401, 403:
    the person must sign in again; also when there is no refresh token); ``RefreshUnavailable``
    for the network, 429, 5xx or an answer that is not a token. ``server_url`` (the MCP
    server's) is needed only for a server that published no protected resource metadata.
    """
    if not snapshot.token.refresh_token:
        return Refused("no_refresh_token")
    provider = BotOAuthProvider.for_snapshot(snapshot, server_url)
    try:
        request = await provider._refresh_token()
    except OAuthFlowError:
        return Refused("client")
    try:
        async with _http() as http:
            response = await http.send(request)
            await response.aread()
    except httpx2.HTTPError:
        return RefreshUnavailable("network")
    if _unavailable(response.status_code):
        return RefreshUnavailable(f"status_{response.status_code}")
    if response.status_code in (400, 401, 403):
        return Refused(_error_word(response))
    if response.status_code != 200:
        return RefreshUnavailable(f"status_{response.status_code}")
    try:
        OAuthToken.model_validate_json(response.content)
    except ValidationError:
        # Checked here: the SDK would log the validation error, which quotes the body.
        return RefreshUnavailable("invalid_response")
    if not await provider._handle_refresh_response(response):  # pragma: no cover
        return RefreshUnavailable("invalid_response")
    token = provider.context.current_tokens
    if token is None:  # pragma: no cover (the SDK sets it or returns False)
        return RefreshUnavailable("invalid_response")
    return Refreshed(
        snapshot.model_copy(
            update={
                "token": token,
                "expires_at": provider.context.token_expiry_time,
                "scope": token.scope,
            }
        )
    )


async def revoke(snapshot: TokenSnapshot) -> RevokeOutcome:
    """Revoke the snapshot's tokens at the server's revocation endpoint (RFC 7009): the
    refresh token first (revoking it ends the grant), then the access token, each with the
    client's authentication as the SDK prepares it for token requests."""
    metadata = snapshot.oauth_metadata
    if metadata is None or metadata.revocation_endpoint is None:
        return NotRevocable()
    endpoint = str(metadata.revocation_endpoint)
    provider = BotOAuthProvider.for_snapshot(snapshot)
    held = [
        (snapshot.token.refresh_token, "refresh_token"),
        (snapshot.token.access_token, "access_token"),
    ]
    try:
        async with _http() as http:
            for token, hint in held:
                if not token:
                    continue
                data = {
                    "token": token,
                    "token_type_hint": hint,
                    "client_id": snapshot.client_info.client_id,
                }
                headers = {"Content-Type": "application/x-www-form-urlencoded"}
                try:
                    data, headers = provider.context.prepare_token_auth(data, headers)
                except OAuthTokenError:
                    return RevokeFailed("client")
                response = await http.post(endpoint, data=data, headers=headers)
                if not 200 <= response.status_code < 300:
                    return RevokeFailed(f"status_{response.status_code}")
    except httpx2.HTTPError:
        return RevokeFailed("network")
    return Revoked()
