"""What the MCP manager's servers that sign each person in are given by the bot: where
people's tokens and the servers' client registrations are found, and the bot's redirect
(the public callback; in `slack-agent chat`, the console's loopback callback).

The manager is built with the tools, before the process opens its Redis state; and
`slack-agent tools` and `check` never open it (nobody is connected there, and nothing may be
registered or stored). So the stores are bound late: until :meth:`SignInStores.use` hands
them the process's :class:`~bot.oauth.side.OAuthSide`, every person reads as not connected
and a registration is kept in memory only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.shared.auth import OAuthClientInformationFull

from bot.config.schema import AppConfig
from bot.oauth.flows import CLIENT_DOCUMENT_PATH, CLIENT_NAME
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.personal import PersonalWiring
from tools.mcp.oauth.provider import ClientStore
from tools.mcp.oauth.tokens import PersonTokens

if TYPE_CHECKING:
    from bot.oauth.side import OAuthSide


class _KeptInMemory:
    """A client registration for this process alone (no Redis: `check`, `tools`)."""

    def __init__(self) -> None:
        self.info: OAuthClientInformationFull | None = None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.info = client_info


class SignInStores:
    """People's tokens and client registrations, bound to Redis once the state is open."""

    def __init__(self) -> None:
        self.side: OAuthSide | None = None
        self._memory: dict[tuple[str, str], _KeptInMemory] = {}

    def use(self, side: OAuthSide | None) -> None:
        self.side = side

    def tokens_for(self, account: Account, server: str) -> PersonTokens:
        if self.side is None:
            return MemoryTokens()  # nobody is connected in a process without the state
        return self.side.tokens_for(account, server)

    def clients_for(self, server: str, redirect_uri: str) -> ClientStore:
        if self.side is None:
            return self._memory.setdefault((server, redirect_uri), _KeptInMemory())
        return self.side.clients_for(server, redirect_uri)


def personal_wiring(
    config: AppConfig, stores: SignInStores, *, console: bool = False
) -> PersonalWiring:
    """The wiring for ``config``'s servers with ``auth: oauth`` (``oauth.redirect_base_url``
    is set: the config's validation makes sure of it).

    ``console``: for `slack-agent chat`, whose person's browser comes back to the console's
    own loopback callback (``oauth.console_port``), never to the public one: every
    authorization request of that process is built with it (a first sign-in, and one a
    server asks for mid-call: a 401 after a refused refresh, a 403 for more scope). The
    client is then registered for that redirect (a pre-registered client must list it), not
    known by the client metadata document."""
    oauth = config.oauth
    redirect = oauth.callback_url
    if redirect is None:
        raise ValueError("oauth.redirect_base_url is needed by a server with auth: oauth")
    base = oauth.redirect_base_url or ""
    document = base + CLIENT_DOCUMENT_PATH if base.startswith("https://") else None
    return PersonalWiring(
        tokens_for=stores.tokens_for,
        clients_for=stores.clients_for,
        redirect_uri=oauth.console_callback_url if console else redirect,
        client_metadata_url=None if console else document,
        client_name=CLIENT_NAME,
        max_sessions=oauth.max_sessions_per_server,
        idle_s=oauth.session_idle_s,
        list_ttl_s=oauth.list_ttl_s,
    )
