"""A ``PersonalWiring`` in memory for the tests: each person's tokens in ``MemoryTokens``,
registrations in a dict; and a whole sign-in of one person to a ``PersonalServer``."""

from __future__ import annotations

from typing import Any

from mcp.shared.auth import OAuthClientInformationFull

from tests.tools.mcp.oauth.people import REDIRECT, follow
from tools.mcp.config import McpServerConfig
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.grants import complete_authorization
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.personal import PersonalServer, PersonalWiring

ALICE = Account("T1", "U_ALICE")
BOB = Account("T1", "U_BOB")


class Clients:
    """One server's registration for one redirect URI."""

    def __init__(self) -> None:
        self.client_info: OAuthClientInformationFull | None = None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class People:
    """Everyone's tokens and the registrations, as the bot would keep them."""

    def __init__(self) -> None:
        self.tokens: dict[tuple[Account, str], MemoryTokens] = {}
        self.clients: dict[tuple[str, str], Clients] = {}

    def tokens_for(self, account: Account, server: str) -> MemoryTokens:
        return self.tokens.setdefault((account, server), MemoryTokens())

    def clients_for(self, server: str, redirect: str) -> Clients:
        return self.clients.setdefault((server, redirect), Clients())

    def wiring(self, **options: Any) -> PersonalWiring:
        return PersonalWiring(
            tokens_for=self.tokens_for,
            clients_for=self.clients_for,
            redirect_uri=REDIRECT,
            client_metadata_url=None,
            client_name="slack-agent tests",
            **options,
        )

    def server(self, url: str, name: str = "files", **options: Any) -> PersonalServer:
        config = McpServerConfig(url=url, auth="oauth", prefix=f"{name}_")
        return PersonalServer(name, config, self.wiring(**options))

    async def connect(self, server: PersonalServer, account: Account, user: str) -> None:
        """``account`` signs in to ``server`` as ``user`` at the test authorization server."""
        pending = await server.begin(account)
        assert pending is not None
        await self.finish(server, account, pending, user)

    async def finish(
        self, server: PersonalServer, account: Account, pending: PendingAuthorization, user: str
    ) -> None:
        """The browser signs in as ``user`` for ``pending``; the token is kept."""
        code, iss = await follow(pending, user)
        self.tokens_for(account, server.name).keep(await complete_authorization(pending, code, iss))
