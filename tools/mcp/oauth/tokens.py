"""What a person's connection to a server holds, and the protocol tokens come through.

``TokenSnapshot`` is everything a process needs to use and refresh a person's token without
having seen the sign-in: the token, when it expires, the client that got it and the metadata
discovered then (the SDK's ``_refresh_token`` would otherwise guess the token endpoint from the
resource's origin). The bot seals it (AES-GCM) into Redis; it never reaches a log, the audit or
the model: its secret fields are left out of ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import BaseModel, Field


class TokenSnapshot(BaseModel):
    """A person's token for one server and issuer, with what refreshing it needs."""

    v: Literal[1] = 1
    issuer: str
    token: OAuthToken = Field(repr=False)
    expires_at: float | None = None  # epoch seconds; None: valid until a 401 says otherwise
    client_info: OAuthClientInformationFull = Field(repr=False)
    oauth_metadata: OAuthMetadata | None = None
    protected_resource_metadata: ProtectedResourceMetadata | None = None
    auth_server_url: str | None = None
    protocol_version: str | None = None
    scope: str | None = None


@dataclass(frozen=True)
class Held:
    """A token to use now: ``ver`` counts its writes (a refresh makes a new version)."""

    ver: int
    snapshot: TokenSnapshot = field(repr=False)


@dataclass(frozen=True)
class Gone:
    """No token: never connected, disconnected, or its refresh was refused."""


@dataclass(frozen=True)
class Unavailable:
    """The token could not be read or refreshed right now (Redis or the authorization server
    away): the connection is kept; the call fails and may be tried again."""

    why: str = ""


Freshness = Held | Gone | Unavailable


class PersonTokens(Protocol):
    """One person's token for one server, shared by every process (the bot's is in Redis).

    ``fresh`` returns a token with at least 10 s of life, refreshing it first when needed, once
    across all processes. ``after_401_of``: the server refused the token of that version; a
    newer one is returned if another process refreshed meanwhile, else it is refreshed now.
    """

    async def fresh(self, *, after_401_of: int | None = None) -> Freshness: ...


@dataclass(frozen=True)
class Refreshed:
    snapshot: TokenSnapshot = field(repr=False)


@dataclass(frozen=True)
class Refused:
    """The authorization server refused the refresh (``invalid_grant``, revoked): the person
    must connect again. ``reason`` is a fixed word for the audit, never the server's text."""

    reason: str = "refused"


@dataclass(frozen=True)
class RefreshUnavailable:
    """The authorization server could not be reached or failed (network, 5xx, 429)."""

    reason: str = "unavailable"


RefreshOutcome = Refreshed | Refused | RefreshUnavailable
