from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp


@pytest.fixture
def auth_server() -> Iterator[AuthServer]:
    """The test authorization server, in a thread; its switches may be changed per test."""
    with AuthServer() as server:
        yield server


@pytest.fixture
def files(auth_server: AuthServer) -> Iterator[PersonalMcp]:
    """The test MCP server whose tokens ``auth_server`` issues."""
    with PersonalMcp(auth_server.url) as server:
        yield server
