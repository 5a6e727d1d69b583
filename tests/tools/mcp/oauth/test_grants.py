"""Phase 2 of a sign-in and the token's later life: the code exchanged from a record that went
through JSON (as to another process), refreshing, revoking (plan §2.3, §2.4, §3.3, §5.5)."""

from __future__ import annotations

import time

import httpx2
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from tests.fakes.oauth_server import AuthServer, bound_socket
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.people import REDIRECT, Person, follow, sign_in, whoami
from tools.mcp.oauth.grants import (
    GrantRefused,
    NotRevocable,
    Revoked,
    client_metadata,
    complete_authorization,
    refresh_grant,
    revoke,
)
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.tokens import Refreshed, RefreshUnavailable, Refused, TokenSnapshot

CIMD_URL = "https://bot.example/oauth/client.json"


async def plan(client: Client) -> str:
    result = await client.call_tool("read_private", {"name": "plan"})
    assert not result.is_error, result
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


async def read_plan(person: Person) -> str:
    found = await person.attempt(plan)
    assert isinstance(found, str), found
    return found


@pytest.mark.parametrize("client", ["dynamic", "basic", "post", "cimd"])
async def test_exchange_in_another_provider(
    client: str, auth_server: AuthServer, files: PersonalMcp
) -> None:
    authority = auth_server.authority
    options: dict[str, object] = {}
    if client in ("basic", "post"):
        method = f"client_secret_{client}"
        authority.add_client("pre-1", "pre-secret", method, REDIRECT)
        options["client_info"] = OAuthClientInformationFull(
            client_id="pre-1",
            client_secret="pre-secret",
            token_endpoint_auth_method=method,
            redirect_uris=[AnyUrl(REDIRECT)],
        )
    if client == "cimd":
        auth_server.switches.cimd = True
        document = client_metadata(REDIRECT, client_name="slack-agent tests")
        authority.add_document({"client_id": CIMD_URL, **document.model_dump(mode="json")})
        options["client_metadata_url"] = CIMD_URL

    snapshot = await sign_in(Person(files.url, MemoryTokens(), **options), "alice")

    # The resource server takes the token, for alice, through a real MCP client.
    tokens = MemoryTokens(snapshot)
    assert await Person(files.url, tokens).attempt(whoami) == "alice"
    assert await read_plan(Person(files.url, tokens)) == "alice's plan: ship the sign-in"

    (token_request,) = authority.token_log
    expected_client = {"dynamic": None, "basic": "pre-1", "post": "pre-1", "cimd": CIMD_URL}
    registered = expected_client[client] or snapshot.client_info.client_id
    assert token_request["client_id"] == registered
    assert token_request["auth"] == {"dynamic": "post", "cimd": "none"}.get(client, client)
    assert authority.counts["registrations"] == (1 if client == "dynamic" else 0)
    # RFC 8707: the resource is named on the authorization and on the token request.
    assert authority.authorize_log[0]["resource"] == files.url
    assert token_request["resource"] == files.url
    # What refreshing needs later, in any process.
    assert snapshot.issuer == auth_server.url
    assert snapshot.expires_at is not None and snapshot.expires_at > time.time() + 3000
    assert snapshot.token.refresh_token and snapshot.scope == "files:read offline_access"
    assert snapshot.oauth_metadata is not None and snapshot.client_info.client_id == registered


async def test_bob_gets_his_own(auth_server: AuthServer, files: PersonalMcp) -> None:
    alice = await sign_in(Person(files.url, MemoryTokens()), "alice")
    bob = await sign_in(Person(files.url, MemoryTokens()), "bob")
    assert await read_plan(Person(files.url, MemoryTokens(bob))) == "bob's plan: review the sign-in"
    assert await read_plan(Person(files.url, MemoryTokens(alice))) == (
        "alice's plan: ship the sign-in"
    )


@pytest.mark.parametrize(
    ("iss", "advertised", "accepted"),
    [
        ("wrong", True, False),
        ("wrong", False, False),
        ("omit", True, False),
        ("omit", False, True),
        ("send", True, True),
    ],
)
async def test_the_issuer_of_the_response_is_checked(
    iss: str, advertised: bool, accepted: bool, auth_server: AuthServer, files: PersonalMcp
) -> None:
    auth_server.switches.iss = iss  # type: ignore[assignment]
    auth_server.switches.advertise_iss = advertised
    pending = await Person(files.url, MemoryTokens()).attempt(whoami)
    assert isinstance(pending, PendingAuthorization)
    code, returned = await follow(pending)
    if accepted:
        snapshot = await complete_authorization(pending, code, returned)
        assert snapshot.token.access_token
        return
    with pytest.raises(GrantRefused) as refused:
        await complete_authorization(pending, code, returned)
    assert refused.value.reason == "issuer"
    assert auth_server.authority.token_log == []  # the code was never sent


async def test_a_refused_code_says_only_a_word(auth_server: AuthServer, files: PersonalMcp) -> None:
    pending = await Person(files.url, MemoryTokens()).attempt(whoami)
    assert isinstance(pending, PendingAuthorization)
    _, iss = await follow(pending)
    with pytest.raises(GrantRefused) as refused:
        await complete_authorization(pending, "not-the-code", iss)
    assert refused.value.reason == "invalid_grant"
    assert str(refused.value) == "the sign-in failed (invalid_grant)"  # not the server's text


async def test_refresh_gives_a_new_token(auth_server: AuthServer, files: PersonalMcp) -> None:
    snapshot = await sign_in(Person(files.url, MemoryTokens()))
    outcome = await refresh_grant(snapshot)
    assert isinstance(outcome, Refreshed)
    new = outcome.snapshot
    assert new.token.access_token != snapshot.token.access_token
    assert new.token.refresh_token not in (None, snapshot.token.refresh_token)  # rotated
    assert new.expires_at is not None and snapshot.expires_at is not None
    assert new.expires_at >= snapshot.expires_at
    assert new.scope == snapshot.scope and new.client_info == snapshot.client_info
    assert auth_server.authority.grants["refresh_token"] == 1
    assert auth_server.authority.token_log[-1]["resource"] == files.url
    assert await Person(files.url, MemoryTokens(new)).attempt(whoami) == "alice"


async def test_refresh_refused(auth_server: AuthServer, files: PersonalMcp) -> None:
    snapshot = await sign_in(Person(files.url, MemoryTokens()))
    outcome = await refresh_grant(snapshot)
    assert isinstance(outcome, Refreshed)
    # The rotated-out refresh token presented again: refused, and its family revoked.
    assert await refresh_grant(snapshot) == Refused("invalid_grant")
    assert await refresh_grant(outcome.snapshot) == Refused("invalid_grant")
    assert auth_server.authority.counts["replayed_refreshes"] == 1

    other = await sign_in(Person(files.url, MemoryTokens()), "bob")
    async with httpx2.AsyncClient() as http:
        await http.post(f"{auth_server.url}/_test/revoke", params={"user": "bob"})
    assert await refresh_grant(other) == Refused("invalid_grant")
    no_refresh = other.model_copy(
        update={"token": other.token.model_copy(update={"refresh_token": None})}
    )
    assert await refresh_grant(no_refresh) == Refused("no_refresh_token")


def at_endpoint(snapshot: TokenSnapshot, url: str) -> TokenSnapshot:
    assert snapshot.oauth_metadata is not None
    metadata = snapshot.oauth_metadata.model_copy(update={"token_endpoint": AnyUrl(url)})
    return snapshot.model_copy(update={"oauth_metadata": metadata})


@pytest.mark.parametrize(("status", "outcome"), [(503, "status_503"), (429, "status_429")])
async def test_refresh_unavailable(
    status: int, outcome: str, auth_server: AuthServer, files: PersonalMcp
) -> None:
    snapshot = await sign_in(Person(files.url, MemoryTokens()))
    failing = at_endpoint(snapshot, f"{auth_server.url}/_test/status/{status}")
    assert await refresh_grant(failing) == RefreshUnavailable(outcome)
    closed = bound_socket()
    port = closed.getsockname()[1]
    closed.close()
    away = at_endpoint(snapshot, f"http://127.0.0.1:{port}/token")
    assert await refresh_grant(away) == RefreshUnavailable("network")
    # A refusal is not the server being away.
    assert await refresh_grant(at_endpoint(snapshot, f"{auth_server.url}/_test/status/400")) == (
        Refused("refused")
    )
    # The token is still good.
    assert isinstance(await refresh_grant(snapshot), Refreshed)


async def test_revoke_at_the_revocation_endpoint(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    snapshot = await sign_in(Person(files.url, MemoryTokens()))
    assert await revoke(snapshot) == Revoked()
    assert auth_server.authority.counts["revocations"] >= 1
    assert auth_server.authority.introspect(snapshot.token.access_token) == {"active": False}
    assert await refresh_grant(snapshot) == Refused("invalid_grant")


async def test_revoke_without_an_endpoint(auth_server: AuthServer, files: PersonalMcp) -> None:
    auth_server.switches.revocation = False
    snapshot = await sign_in(Person(files.url, MemoryTokens()))
    assert await revoke(snapshot) == NotRevocable()
    assert auth_server.authority.counts["revocations"] == 0
    assert auth_server.authority.introspect(snapshot.token.access_token)["active"] is True


def test_client_metadata_for_a_redirect() -> None:
    web = client_metadata("https://bot.example/oauth/callback", client_name="bot")
    assert web.application_type == "web"
    assert web.grant_types == ["authorization_code", "refresh_token"]
    assert client_metadata(
        "http://127.0.0.1:8976/oauth/callback", client_name="bot"
    ).application_type == ("native")
    with pytest.raises(ValueError, match="loopback"):
        client_metadata("http://bot.example/oauth/callback", client_name="bot")
