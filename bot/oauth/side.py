"""``OAuthSide``: what a process holds for people's sign-ins to MCP servers, built once at
start-up when any server has ``auth: oauth`` (None otherwise): the ``oauth:`` config, the
sealer (``SLACK_AGENT_SECRET_KEY``, and the previous key for opening only: a key that is not
base64 of 32 bytes stops start-up naming its variable), every person's connections
(``Connections``, on the process's Redis with its replication and audit log), the sign-ins
under way (``SignIns``), and the records the personal servers need: each person's token for
a server (refreshed with ``grants.refresh_grant``) and each server's client registration.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.config.environment import Environment
from bot.config.schema import AppConfig, oauth_servers
from bot.oauth.config import OAuthConfig
from bot.oauth.crypto import Sealer, link_aad, sealer_from
from bot.oauth.flows import CLIENT_DOCUMENT_PATH, SignIns
from bot.oauth.records import ClientRecords, Connections, TokenRecords
from bot.state.audit import AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication
from bot.turn.store.approvals import Approvals
from tools.mcp.config import McpServerConfig
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.grants import refresh_grant
from tools.mcp.oauth.tokens import RefreshOutcome, TokenSnapshot


class OAuthSide:
    def __init__(
        self,
        config: OAuthConfig,
        servers: Mapping[str, McpServerConfig],
        sealer: Sealer,
        client: Redis,
        keys: Keys,
        audit: AuditLog,
        approvals: Approvals,
        replication: Replication | None = None,
        *,
        command: str = "/agent",
    ) -> None:
        """``servers``: the MCP servers each person signs in to, by name; ``command``: the
        slash command (``slack.command``) the sign-in pages point at."""
        self.config = config
        self.servers = dict(servers)
        self.sealer = sealer
        self.client = client
        self.keys = keys
        self.replication = replication or Replication()
        self.connections = Connections(client, keys, sealer, audit, self.replication)
        self.sign_ins = SignIns(
            client,
            keys,
            sealer,
            config,
            approvals,
            audit,
            self.tokens_for,
            self.replication,
            command=command,
        )

    @classmethod
    def of(
        cls,
        config: AppConfig,
        sealer: Sealer | None,
        client: Redis,
        keys: Keys,
        audit: AuditLog,
        approvals: Approvals,
        replication: Replication | None = None,
    ) -> OAuthSide:
        """The side for ``config``'s servers with ``auth: oauth``. ``sealer``: built at
        start-up from the environment (``crypto.sealer_from``); None reads it now."""
        if sealer is None:
            sealer = sealer_from(Environment())
        servers = {name: config.mcp.servers[name] for name in oauth_servers(config)}
        return cls(
            config.oauth,
            servers,
            sealer,
            client,
            keys,
            audit,
            approvals,
            replication,
            command=config.slack.command,
        )

    def __repr__(self) -> str:
        return f"OAuthSide(servers={sorted(self.servers)!r}, kid={self.sealer.kid!r})"

    @property
    def redirect_uri(self) -> str | None:
        """Where people's browsers come back: ``<oauth.redirect_base_url>/oauth/callback``."""
        return self.config.callback_url

    @property
    def client_metadata_url(self) -> str | None:
        """This client's metadata document (CIMD), where the base is https (the SDK uses it
        only then, and only where the authorization server supports them)."""
        base = self.config.redirect_base_url
        if base is None or not base.startswith("https://"):
            return None
        return base + CLIENT_DOCUMENT_PATH

    def clients_for(self, server: str, redirect_uri: str) -> ClientRecords:
        """``server``'s dynamic client registration for ``redirect_uri``."""
        return ClientRecords(
            self.client, self.keys, self.sealer, server, redirect_uri, self.replication
        )

    def tokens_for(self, account: Account, server: str) -> TokenRecords:
        """``account``'s token for ``server``, refreshed through the authorization server
        that issued it (once across replicas)."""
        configured = self.servers.get(server)
        server_url = configured.url if configured is not None else None

        async def refresh(snapshot: TokenSnapshot) -> RefreshOutcome:
            return await refresh_grant(snapshot, server_url=server_url)

        return self.connections.tokens(account, server, refresh)

    def seal_link(self, account: Account, server: str, url: str) -> str:
        """A start link sealed for the request that shows it (it carries the state)."""
        return self.sealer.seal(url.encode(), link_aad(account.team, account.user, server))

    def open_link(self, account: Account, server: str, sealed: str) -> str:
        """The start link :meth:`seal_link` sealed (``crypto.Unreadable`` otherwise)."""
        return self.sealer.open(sealed, link_aad(account.team, account.user, server)).decode()
