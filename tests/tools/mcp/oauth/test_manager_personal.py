"""The manager with servers that sign each person in: each a PersonalServer with no shared
connection, closed with the others; without the sign-in wiring, a clear error at once."""

from __future__ import annotations

import pytest

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.wiring import ALICE, People
from tools.mcp.config import McpConfig
from tools.mcp.manager import McpManager, SignInNotWired
from tools.mcp.oauth.personal import PersonalServer


def config(url: str) -> McpConfig:
    return McpConfig.model_validate(
        {"servers": {"files": {"url": url, "auth": "oauth", "prefix": "files_"}}}
    )


def test_without_the_wiring_the_manager_refuses_at_once() -> None:
    with pytest.raises(SignInNotWired, match="MCP server files signs each person in"):
        McpManager(config("https://files.example/mcp"))


async def test_personal_servers_have_no_shared_connection(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    people = People()
    manager = McpManager(config(files.url), personal=people.wiring())
    assert manager.connections == {}
    assert isinstance(manager.personal["files"], PersonalServer)
    await manager.start()
    try:
        assert manager.tools() == []  # nothing of a person's in the registry's source
        server = manager.personal["files"]
        await people.connect(server, ALICE, "alice")
        assert {t.name for t in await server.tools_for(ALICE)} >= {"files_whoami"}
        session = server.pool.sessions[ALICE]
    finally:
        await manager.stop()
    assert session.closed.is_set() and not server.pool.sessions
