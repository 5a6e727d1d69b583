"""Phase 1 of a sign-in: the provider lets the SDK build the authorization request and records
it instead of waiting for a person (plan §2.2, §2.5)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.people import REDIRECT, Person, whoami
from tools.mcp.oauth.grants import client_metadata
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import PendingAuthorization, SignInRequired
from tools.mcp.oauth.provider import BotOAuthProvider

RS = "https://rs.example"
AS = "https://as.example"
PRM_URL = f"{RS}/.well-known/oauth-protected-resource/mcp"


@dataclass
class Site:
    """A resource server and its authorization server, as metadata documents."""

    challenge: str = f'Bearer resource_metadata="{PRM_URL}"'
    prm: dict[str, Any] | None = field(
        default_factory=lambda: {
            "resource": f"{RS}/mcp",
            "authorization_servers": [AS],
            "scopes_supported": ["files:read"],
        }
    )
    issuer: str = AS
    scopes_supported: list[str] | None = None
    registration: bool = True
    protocol: str | None = "2025-11-25"

    def metadata(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "code_challenge_methods_supported": ["S256"],
        }
        if self.registration:
            found["registration_endpoint"] = f"{self.issuer}/register"
        if self.scopes_supported is not None:
            found["scopes_supported"] = self.scopes_supported
        return found

    def answer(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        if url == f"{RS}/mcp":
            return httpx2.Response(401, headers={"WWW-Authenticate": self.challenge})
        if url == PRM_URL and self.prm is not None:
            return httpx2.Response(200, json=self.prm)
        if url == f"{self.issuer}/.well-known/oauth-authorization-server":
            return httpx2.Response(200, json=self.metadata())
        if url == f"{self.issuer}/register":
            return httpx2.Response(
                201,
                json={
                    "client_id": "client-1",
                    "client_secret": "registered-secret",
                    "token_endpoint_auth_method": "client_secret_post",
                    "redirect_uris": [REDIRECT],
                },
            )
        return httpx2.Response(404)


SITES = {
    "scopes from the resource metadata": Site(),
    "offline access": Site(scopes_supported=["files:read", "offline_access"]),
    "a scope in the challenge": Site(
        challenge=f'Bearer scope="files:admin", resource_metadata="{PRM_URL}"'
    ),
    "no resource metadata": Site(challenge="Bearer", prm=None, issuer=RS, protocol=None),
    "pre-registered": Site(registration=False),
}
PRE_REGISTERED = OAuthClientInformationFull(
    client_id="pre-1",
    client_secret="pre-secret",
    token_endpoint_auth_method="client_secret_basic",
    redirect_uris=[AnyUrl(REDIRECT)],
)


class Storage:
    """The SDK's token storage, in memory, for the unmodified provider."""

    def __init__(self, client: OAuthClientInformationFull | None) -> None:
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raise AssertionError("no token in this test")

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def url_built_by(auth: httpx2.Auth, site: Site, built: asyncio.Future[str]) -> str:
    """Send one request through ``auth`` to the site; the authorization URL it built."""
    headers = {"MCP-Protocol-Version": site.protocol} if site.protocol else {}

    async def send() -> None:
        async with httpx2.AsyncClient(
            transport=httpx2.MockTransport(site.answer), auth=auth
        ) as http:
            await http.post(f"{RS}/mcp", headers=headers)

    task = asyncio.create_task(send())
    waits: set[asyncio.Future[Any]] = {task, built}
    async with asyncio.timeout(10):
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return built.result()


def parameters(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


@pytest.mark.parametrize("name", list(SITES))
async def test_the_url_is_the_sdks(name: str) -> None:
    site = SITES[name]
    client = PRE_REGISTERED if not site.registration else None
    loop = asyncio.get_running_loop()

    theirs: asyncio.Future[str] = loop.create_future()

    async def redirect(url: str) -> None:
        theirs.set_result(url)

    async def callback() -> AuthorizationCodeResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    metadata = client_metadata(REDIRECT, client_name="slack-agent tests")
    sdk = OAuthClientProvider(
        f"{RS}/mcp",
        metadata.model_copy(deep=True),
        Storage(client),
        redirect_handler=redirect,
        callback_handler=callback,
    )
    expected = await url_built_by(sdk, site, theirs)

    captured: asyncio.Future[PendingAuthorization] = loop.create_future()
    built: asyncio.Future[str] = loop.create_future()

    def pending(found: PendingAuthorization) -> None:
        captured.set_result(found)
        built.set_result(found.authorization_url)

    ours = BotOAuthProvider(
        f"{RS}/mcp",
        metadata.model_copy(deep=True),
        MemoryTokens(),
        on_pending=pending,
        on_unavailable=lambda why: None,
        client_info=client,
    )
    url = await url_built_by(ours, site, built)
    found = captured.result()

    mine, sdks = parameters(url), parameters(expected)
    assert url.split("?")[0] == expected.split("?")[0]
    for random in ("state", "code_challenge"):
        assert len(mine.pop(random)[0]) >= 43
        sdks.pop(random)
    assert mine == sdks
    # The recorded request is the one in the URL: its state, and the verifier of its challenge.
    assert found.state == parameters(url)["state"][0]
    challenge = base64.urlsafe_b64encode(hashlib.sha256(found.code_verifier.encode()).digest())
    assert parameters(url)["code_challenge"] == [challenge.decode().rstrip("=")]
    assert found.redirect_uri == REDIRECT
    assert found.client_info.client_id == (client.client_id if client else "client-1")
    assert found.issuer == site.issuer
    assert found.step_up is False


async def test_the_resource_and_scope_the_sdk_chose_are_asked_for(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    person = Person(files.url, MemoryTokens())
    found = await person.attempt(whoami)
    assert isinstance(found, PendingAuthorization)
    asked = parameters(found.authorization_url)
    assert asked["resource"] == [files.url]
    # The resource's scopes, and offline_access since this server offers it.
    assert asked["scope"] == ["files:read offline_access"]
    assert found.scope == "files:read offline_access"
    assert found.protected_resource_metadata is not None
    assert found.oauth_metadata is not None and found.issuer == auth_server.url


async def test_config_scopes_are_added(auth_server: AuthServer, files: PersonalMcp) -> None:
    person = Person(files.url, MemoryTokens(), extra_scopes="files:write files:read")
    found = await person.attempt(whoami)
    assert isinstance(found, PendingAuthorization)
    assert parameters(found.authorization_url)["scope"] == ["files:read offline_access files:write"]
    assert found.scope == "files:read offline_access files:write"


async def test_capture_logs_nothing_and_leaves_no_task(
    auth_server: AuthServer, files: PersonalMcp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    before = asyncio.all_tasks()
    person = Person(files.url, MemoryTokens())
    found = await person.attempt(whoami)
    assert isinstance(found, PendingAuthorization)
    assert asyncio.all_tasks() <= before
    assert auth_server.authority.counts["registrations"] == 1  # it got as far as that
    secrets = [found.state, found.code_verifier, found.authorization_url]
    for record in caplog.records:
        text = record.getMessage()
        assert record.levelno < logging.WARNING, text
        assert "OAuth flow error" not in text
        assert not any(secret in text for secret in secrets), text


async def test_no_secret_in_repr_or_error(auth_server: AuthServer, files: PersonalMcp) -> None:
    person = Person(files.url, MemoryTokens())
    found = await person.attempt(whoami)
    assert isinstance(found, PendingAuthorization)
    needed = SignInRequired(found)
    assert needed.pending is found and needed.step_up is False
    secret = found.client_info.client_secret
    assert secret
    for shown in (repr(found), str(found), str(needed), repr(needed)):
        for value in (found.state, found.code_verifier, secret):
            assert value not in shown
    # The record itself keeps them: another process needs them to finish the sign-in.
    again = PendingAuthorization.model_validate_json(found.model_dump_json())
    assert again.code_verifier == found.code_verifier and again.client_info == found.client_info
