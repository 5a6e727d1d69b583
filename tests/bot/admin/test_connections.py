"""``/agent connect``, ``connections``, ``connections all`` and ``disconnect`` on the real
Redis, against the test authorization server and MCP server: a start link for the person
alone that connects them (and wakes the turns waiting for it); their own list; an admin's
list with no secret; a disconnect that revokes at the authorization server, or says plainly
where it cannot; people from other workspaces refused unless allowed."""

from __future__ import annotations

import time

import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from bot.admin.commands import AdminCommands
from bot.admin.context import AdminStores, BeginSignIn, Caller
from bot.budget.budgets import Budgets
from bot.budget.estimate import CallEstimator
from bot.config.schema import AppConfig
from bot.llm.tokens import TokenEstimator
from bot.slack.blocks.sign_in import CONNECT_ACTION
from bot.slack.inbound.listeners.commands import ephemeral
from bot.state.audit import AuditEntry, AuditKind
from bot.turn.store.approvals import SIGN_IN, ApprovalState, sign_in_field
from permissions.policy import Policy
from permissions.resolver import RoleResolver
from tests.bot.oauth.signing_in import (
    ALICE,
    Browser,
    Site,
    auth_server,
    browser,
    capture,
    files,
    site,
)
from tests.bot.turn.store.test_approvals import a_turn
from tests.fakes.oauth_server import AuthServer
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.tokens import TokenSnapshot

__all__ = ["auth_server", "browser", "files", "site"]  # fixtures

pytestmark = pytest.mark.timeout(60)

ROLES = {
    "admins": {"admin": True, "members": ["UADMIN"], "tools": ["*"]},
    "everyone": {"default": True, "tools": ["*"]},
}
ALICE_HERE = Caller("T1", "U1", "C1", user_team="T1")
ADMIN = Caller("T1", "UADMIN", "C1", user_team="T1")
OUTSIDER = Caller("T1", "U1", "C1", user_team="TOTHER")


def begin_with(site: Site) -> BeginSignIn:
    """What the personal server's ``begin`` does: the SDK's request, captured."""

    async def begin(account: Account, server: str) -> PendingAuthorization | None:
        assert (account, server) == (ALICE, "files")
        return await capture(site.files_url, site.callback)

    return begin


async def not_shared(channel: str) -> bool:
    return False


def admin_commands(site: Site, begin: BeginSignIn | None = None) -> AdminCommands:
    state = site.state
    config = AppConfig.model_validate({"roles": ROLES})
    resolver = RoleResolver(config.roles, grants=state.shared.grants, cache=state.shared.roles)
    policy = Policy(config.roles, resolver, state.shared.switches, state.shared.policy_reads)
    budgets = Budgets(
        config.budgets,
        config.roles,
        state.budgets,
        state.shared.audit,
        CallEstimator(TokenEstimator(), None),
        policy,
    )
    stores = AdminStores(
        state.shared.switches,
        state.shared.grants,
        state.shared.audit,
        state.shared.usage,
        state.shared.feedback,
        budgets,
        state.shared.channels,
        state.shared.memory,
        not_shared,
        state.shared.schedules,
        oauth=site.side,
        begin_sign_in=begin or begin_with(site),
    )
    from tools.registry import ToolRegistry

    return AdminCommands("/agent", policy, ToolRegistry(), config.roles, stores)


async def audited(site: Site, kind: AuditKind, action: str) -> list[AuditEntry]:
    return [
        e for e in await site.state.shared.audit.latest(50) if e.kind is kind and e.action == action
    ]


async def connected(site: Site, browser: Browser, admin: AdminCommands) -> None:
    reply = await admin.run(ALICE_HERE, "connect files")
    assert reply.link is not None
    status, _, _ = await browser.get(await browser.to_callback(reply.link.url))
    assert status == 200


async def test_connect_gives_the_person_a_link_button_that_connects_them(
    site: Site, browser: Browser
) -> None:
    admin = admin_commands(site)
    # A turn was waiting for alice to connect files; its ephemeral was lost.
    queued = await a_turn(site.state)
    request, _ = await site.state.threads.approvals.open(
        queued,
        "c1",
        "files_whoami",
        "",
        600,
        kind=SIGN_IN,
        server="files",
        field=sign_in_field("c1", 1),
    )
    await site.side.sign_ins.begin(
        ALICE,
        "files",
        await capture(site.files_url, site.callback),
        request_id=request.id,
        external=False,
        ttl_s=600,
    )

    reply = await admin.run(ALICE_HERE, "connect files")

    assert reply.link is not None and reply.link.server == "files"
    assert reply.link.url.startswith(f"{site.base}/oauth/start?state=")
    assert reply.link.url not in reply.text  # the words never carry the link
    shown = ephemeral(reply)
    assert shown.blocks is not None
    [button] = shown.blocks[1]["elements"]
    assert (button["action_id"], button["url"]) == (CONNECT_ACTION, reply.link.url)
    assert "15 minutes" in str(shown.blocks[0])
    [entry] = await audited(site, AuditKind.ADMIN, "connect")
    assert (entry.actor, entry.target, entry.outcome) == ("U1", "files", "ok")

    status, _, _ = await browser.get(await browser.to_callback(reply.link.url))
    assert status == 200
    [connection] = await site.side.connections.connections(ALICE)
    assert connection.server == "files"
    woken = await site.state.threads.approvals.get(request.id)
    assert woken is not None and woken.state is ApprovalState.APPROVED


async def test_connect_refuses_outsiders_unless_allowed(site: Site) -> None:
    begun: list[str] = []

    async def begin(account: Account, server: str) -> PendingAuthorization | None:
        begun.append(server)
        return None

    admin = admin_commands(site, begin)
    reply = await admin.run(OUTSIDER, "connect files")
    assert reply.text == "People from other workspaces cannot connect `files` here."
    assert reply.link is None and begun == []
    [entry] = await audited(site, AuditKind.ADMIN, "connect")
    assert (entry.actor, entry.outcome) == ("U1", "refused")
    # Allowed: asked for (this server needs no sign-in).
    allowing = site.side.config.model_copy(update={"allow_external": True})
    site.side.config = site.side.sign_ins.config = allowing
    reply = await admin.run(OUTSIDER, "connect files")
    assert reply.text.startswith("`files` answered without asking you to sign in") and begun == [
        "files"
    ]


async def test_connect_names_only_servers_that_sign_people_in(site: Site) -> None:
    admin = admin_commands(site)
    reply = await admin.run(ALICE_HERE, "connect fles")
    assert reply.text == (
        "`fles` is not a server people connect to here. Did you mean `files`? Servers: `files`."
    )
    assert (await admin.run(ALICE_HERE, "connect")).text == "Usage: `/agent connect <server>`"


async def test_connections_lists_the_persons_own(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    admin = admin_commands(site)
    none = await admin.run(ALICE_HERE, "connections")
    assert none.text.startswith("You have no connections.")
    await connected(site, browser, admin)

    listed = (await admin.run(ALICE_HERE, "connections")).text

    host = auth_server.url.removeprefix("http://")
    assert listed.startswith("*Your connections:*\n• `files` — " + host)
    assert "scope `files:read" in listed and listed.endswith("renews by itself")
    # A token that cannot renew, past its expiry: the person is told to connect again.
    held = await site.side.tokens_for(ALICE, "files").current()
    assert held is not None
    expired = held.snapshot.model_copy(
        update={
            "token": OAuthToken(access_token="at-old", expires_in=1),
            "expires_at": time.time() - 5,
        }
    )
    await site.side.tokens_for(ALICE, "files").store(expired, actor="U1")
    assert (await admin.run(ALICE_HERE, "connections")).text.endswith("expired: connect again")


async def test_an_admin_lists_everyones_connections_and_no_secret(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    admin = admin_commands(site)
    await connected(site, browser, admin)

    refused = await admin.run(ALICE_HERE, "connections all")
    assert refused.text.startswith("Sorry, `/agent connections all` is only for admins.")
    listed = (await admin.run(ADMIN, "connections all")).text

    assert listed.startswith("*Connections:*\n• <@U1> → `files` (" + auth_server.url[7:])
    assert auth_server.authority.secrets_seen
    assert not [s for s in auth_server.authority.secrets_seen if s in listed]
    assert [
        (e.actor, e.outcome) for e in await audited(site, AuditKind.ADMIN, "connections all")
    ] == [
        ("UADMIN", "ok"),
        ("U1", "refused"),
    ]
    assert "connections all" in (await admin.run(ADMIN, "help")).text
    assert "connections all" not in (await admin.run(ALICE_HERE, "help")).text
    assert "`/agent connect <server>`" in (await admin.run(ALICE_HERE, "help")).text


async def test_disconnect_revokes_at_the_authorization_server_and_forgets(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    admin = admin_commands(site)
    await connected(site, browser, admin)
    held = await site.side.tokens_for(ALICE, "files").current()
    assert held is not None
    access = held.snapshot.token.access_token
    assert auth_server.authority.introspect(access)["active"]

    reply = await admin.run(ALICE_HERE, "disconnect files")

    host = auth_server.url.removeprefix("http://")
    assert reply.text == f"Disconnected `files`: the bot forgot your access, and {host} revoked it."
    # The grant is revoked at the server (its refresh token first: the whole grant ends).
    assert auth_server.authority.counts["revocations"] == 1
    assert not auth_server.authority.introspect(access)["active"]
    assert await site.side.connections.connections(ALICE) == []
    assert await site.side.connections.team_connections("T1") == []
    [entry] = await audited(site, AuditKind.CONNECTION, "disconnected")
    assert (entry.actor, entry.target) == ("U1", "files")
    again = await admin.run(ALICE_HERE, "disconnect files")
    assert again.text == "You are not connected to `files`."


async def test_disconnect_without_a_revocation_endpoint_says_so(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    auth_server.switches.revocation = False  # before the sign-in: its metadata has none
    admin = admin_commands(site)
    await connected(site, browser, admin)

    reply = await admin.run(ALICE_HERE, "disconnect files")

    host = auth_server.url.removeprefix("http://")
    assert reply.text == (
        f"Disconnected `files`: the bot forgot your access. {host} cannot revoke it from "
        "here: remove the bot's access there."
    )
    assert auth_server.authority.counts["revocations"] == 0
    assert await site.side.connections.connections(ALICE) == []


async def test_a_failed_revocation_is_said_and_audited_and_the_access_forgotten(
    site: Site, auth_server: AuthServer
) -> None:
    admin = admin_commands(site)
    held = await stored_with_revocation_at(site, auth_server.url + "/_test/status/503")
    assert held

    reply = await admin.run(ALICE_HERE, "disconnect files")

    assert "but revoking it at" in reply.text and "failed (status_503)" in reply.text
    [failed] = await audited(site, AuditKind.CONNECTION, "revoke_failed")
    assert (failed.actor, failed.target, failed.outcome) == ("U1", "files", "status_503")
    assert await site.side.connections.connections(ALICE) == []


async def stored_with_revocation_at(site: Site, endpoint: str) -> bool:
    """Alice's token as if her authorization server revoked at ``endpoint``."""
    from mcp.shared.auth import OAuthMetadata

    issuer = endpoint.split("/_test")[0]
    snapshot = TokenSnapshot(
        issuer=issuer,
        token=OAuthToken(access_token="at-x", refresh_token="rt-x", expires_in=3600),
        expires_at=time.time() + 3600,
        client_info=OAuthClientInformationFull(client_id="c", redirect_uris=[site.callback]),
        oauth_metadata=OAuthMetadata(
            issuer=issuer,
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
            revocation_endpoint=endpoint,
        ),
    )
    await site.side.tokens_for(ALICE, "files").store(snapshot, actor="U1")
    return True
