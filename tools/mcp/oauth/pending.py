"""A sign-in the SDK has prepared and nobody has finished: what the callback needs.

Phase 1 (``provider.py``) lets the SDK discover, register, pick scopes and build the
authorization URL with its PKCE verifier and state, then records all of it here instead of
waiting for a person. Phase 2 (``grants.py``), in whichever process the browser's callback
reaches, puts it back into a new provider's context and exchanges the code. The verifier,
the state and the client's registration (a secret included) are secrets: they are left out of
``repr``, and ``SignInRequired`` says none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth.oauth2 import OAuthContext, _origin_issuer
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, ProtectedResourceMetadata
from pydantic import AnyUrl, BaseModel, Field

from tools.errors import CallNotStarted

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider


class PendingAuthorization(BaseModel):
    """An authorization request the SDK built, with everything its code exchange needs."""

    server_url: str
    authorization_url: str = Field(repr=False)  # carries the state
    state: str = Field(repr=False)
    code_verifier: str = Field(repr=False)
    redirect_uri: str
    scope: str | None = None  # what was asked for; a token response without one grants this
    client_info: OAuthClientInformationFull = Field(repr=False)
    oauth_metadata: OAuthMetadata | None = None
    protected_resource_metadata: ProtectedResourceMetadata | None = None
    auth_server_url: str | None = None
    protocol_version: str | None = None
    issuer: str  # the authorization server's issuer (its metadata's, else the expected one)
    step_up: bool = False  # the server asked for more scope than the token had (403)

    @classmethod
    def capture(
        cls, context: OAuthContext, url: str, verifier: str, *, step_up: bool = False
    ) -> PendingAuthorization:
        """The request the SDK built into ``url`` (its state in the query) with ``verifier``,
        and the context it was built from."""
        if context.client_info is None or not context.client_metadata.redirect_uris:
            raise ValueError("the SDK built an authorization URL without a client or redirect")
        state = parse_qs(urlsplit(url).query)["state"][0]
        if context.oauth_metadata is not None:
            issuer = str(context.oauth_metadata.issuer)
        else:
            issuer = context.auth_server_url or _origin_issuer(context.server_url)
        return cls(
            server_url=context.server_url,
            authorization_url=url,
            state=state,
            code_verifier=verifier,
            redirect_uri=str(context.client_metadata.redirect_uris[0]),
            scope=context.client_metadata.scope,
            client_info=context.client_info,
            oauth_metadata=context.oauth_metadata,
            protected_resource_metadata=context.protected_resource_metadata,
            auth_server_url=context.auth_server_url,
            protocol_version=context.protocol_version,
            issuer=issuer,
            step_up=step_up,
        )

    def restore(self, provider: OAuthClientProvider) -> None:
        """Put this request's context back into ``provider`` (a new one, in any process), as
        the SDK held it when it built the URL."""
        context = provider.context
        context.server_url = self.server_url
        context.client_metadata.redirect_uris = [AnyUrl(self.redirect_uri)]
        context.client_metadata.scope = self.scope
        context.client_info = self.client_info
        context.oauth_metadata = self.oauth_metadata
        context.protected_resource_metadata = self.protected_resource_metadata
        context.auth_server_url = self.auth_server_url
        context.protocol_version = self.protocol_version


class SignInRequired(CallNotStarted):
    """The server refused the request at the HTTP level (401, or 403 for more scope): the
    person must sign in, with the authorization request in ``pending``. Its text names no
    secret."""

    def __init__(self, pending: PendingAuthorization) -> None:
        self.pending = pending
        self.step_up = pending.step_up
        what = "more access is needed" if pending.step_up else "a sign-in is needed"
        super().__init__(f"{what} at the authorization server {pending.issuer}")
