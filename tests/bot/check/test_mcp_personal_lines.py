"""`slack-agent check`'s line for each MCP server that signs each person in: its discovery
run as a sign-in would run it, with a stand-in client so that nothing registers (plan §6.3),
against the test authorization and resource servers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from bot.check.findings import Finding
from bot.check.mcp_servers import check_mcp
from bot.config.schema import AppConfig
from bot.process.services import Tools
from bot.schedules.tool import ScheduleTool
from tests.fakes.oauth_server import AuthServer, Switches, ThreadedServer, bound_socket
from tests.fakes.personal_mcp import PersonalMcp
from tests.fakes.redis_server import free_port
from tests.tools.mcp.oauth.wiring import People
from tools.mcp.manager import McpManager
from tools.registry import ToolRegistry

CIMD_URL = "https://bot.example.com/oauth/client.json"


def tools_for(url: str, *, client_metadata_url: str | None = None, **server: Any) -> Tools:
    config = AppConfig.model_validate(
        {
            "oauth": {"redirect_base_url": "http://127.0.0.1:3000"},
            "mcp": {"servers": {"files": {"url": url, "auth": "oauth", **server}}},
        }
    )
    wiring = replace(People().wiring(), client_metadata_url=client_metadata_url)
    schedules = ScheduleTool(config.schedules, config.slack.command)
    return Tools(config, ToolRegistry(), McpManager(config.mcp, personal=wiring), schedules)


async def line_for(tools: Tools) -> Finding:
    try:
        (found,) = await check_mcp(tools)
    finally:
        await tools.aclose()
    return found


@pytest.fixture
def no_metadata() -> Iterator[str]:
    """A server that refuses every token-less request and publishes no metadata at all."""

    async def refuse(request: Request) -> Response:
        return PlainTextResponse("no", status_code=401, headers={"WWW-Authenticate": "Bearer"})

    sock = bound_socket()
    server = ThreadedServer(Starlette(routes=[Route("/mcp", refuse, methods=["POST"])]), sock)
    server.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.stop()


async def test_dynamic_registration_nothing_registered() -> None:
    with AuthServer() as auth_server, PersonalMcp(auth_server.url) as files:
        found = await line_for(tools_for(files.url))

    assert found.line == (
        f"[ok  ] mcp files: signs each person in: issuer {auth_server.url}, dynamic "
        "registration, scopes files:read offline_access; lists nothing without a token"
    )
    assert auth_server.authority.counts["registrations"] == 0


@pytest.mark.parametrize(
    ("switches", "options", "said"),
    [
        (Switches(cimd=True), {"client_metadata_url": CIMD_URL}, "client ID metadata document"),
        (
            Switches(registration=False),
            {"oauth": {"client_id": "pre-1", "scopes": ["files:write"]}},
            "pre-registered client",
        ),
    ],
)
async def test_how_the_client_is_known(
    switches: Switches, options: dict[str, Any], said: str
) -> None:
    with AuthServer(switches) as auth_server, PersonalMcp(auth_server.url) as files:
        found = await line_for(tools_for(files.url, **options))
    assert found.status == "ok", found.line
    assert f"issuer {auth_server.url}, {said}, scopes files:read offline_access" in found.line
    if "oauth" in options:  # config scopes are added to what the server names
        assert "offline_access files:write;" in found.line
    assert auth_server.authority.counts["registrations"] == 0


async def test_no_way_to_register_fails() -> None:
    with (
        AuthServer(Switches(registration=False)) as auth_server,
        PersonalMcp(auth_server.url) as files,
    ):
        found = await line_for(tools_for(files.url))
    assert found.line == (
        f"[FAIL] mcp files: signs each person in, but its authorization server {auth_server.url} "
        "offers no way to register the bot (no registration endpoint, no client ID metadata "
        "documents): give mcp.servers.files.oauth.client_id"
    )


async def test_a_token_less_listing_is_counted() -> None:
    with AuthServer() as auth_server, PersonalMcp(auth_server.url, anonymous_list=True) as files:
        found = await line_for(tools_for(files.url))
    assert found.line == (
        "[ok  ] mcp files: signs each person in: connects without a token (a sign-in is asked "
        "for at the first call it refuses); 2 tools listed without a token (offered as "
        "connect-to-use)"
    )


async def test_no_resource_metadata_fails_naming_it(no_metadata: str) -> None:
    found = await line_for(tools_for(no_metadata))
    assert found.line == (
        "[FAIL] mcp files: signs each person in, but no authorization server found (no "
        f"protected resource metadata for {no_metadata})"
    )


async def test_a_server_away_fails() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    found = await line_for(tools_for(url, connect_timeout_s=1))
    assert found.line == (
        f"[FAIL] mcp files: signs each person in, but could not be reached at {url}"
    )
