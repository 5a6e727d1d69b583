"""An MCP server that signs each person in (``auth: oauth``), as the tools each person is
offered: :class:`PersonalServer`, and :class:`PersonalWiring`, what the bot gives it.

- **Connected** (the person's ``PersonTokens`` hold a token): the person's own list, from
  their own session (``pool.py``) through the SDK's response cache: one store per server,
  each person's entries in their own partition (a hash of team, user and issuer), entries
  the server marks ``public`` shared (``share_public``), results without a ``ttlMs`` hint
  (2025-11-25 servers) kept ``list_ttl_s``. When the first page is the one seen last, the
  tools built from it are reused. ``ToolListing``'s rules apply (allow, deny, prefix, a
  task-only tool left out).
- **Not connected**: the server's token-less listing (one token-less attempt at start and
  every ``list_ttl_s``; a refusal means "lists nothing without a token", not an outage),
  else the last listing a connected person got that the server marked ``public`` on a
  2026-07-28 connection, every page of it (a listing with one page not public is shared
  with nobody): each tool offered as a "connect to use" copy (the description says
  so; once the person is connected the copy runs the tool of that name on their own
  session). With no listing at all: one ``<prefix>connect`` tool. A listing that ends in a
  sign-in (a token revoked, its refresh refused) is not a sign-in: the person gets these
  tools until they connect again.
- :meth:`PersonalServer.begin`: a person's authorization request, built by the SDK
  (discovery, registration, PKCE) on a throw-away session and captured, not waited on.
- :meth:`PersonalServer.survey`: the same discovery for `slack-agent check`, with a
  stand-in client so that nothing registers.

Every tool of a personal server says ``per_person`` and has the source ``mcp <server>``;
names are exposed as shared servers' are (``remote_tools.exposed_name``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types
from mcp.client import Client
from mcp.client.auth.utils import should_use_client_metadata_url
from mcp.client.caching import CacheConfig, InMemoryResponseCacheStore
from mcp.shared.auth import OAuthClientInformationFull
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyUrl

from tools.definition import Tool
from tools.errors import ToolError
from tools.mcp.calls import Caller, McpUnavailable
from tools.mcp.config import McpServerConfig, substitute
from tools.mcp.failures import describe
from tools.mcp.listing import ToolListing, listed
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.errors import SignInFailed, SignInUnavailable
from tools.mcp.oauth.grants import GrantError, GrantRefused, GrantUnavailable, client_metadata
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import PendingAuthorization, SignInRequired
from tools.mcp.oauth.pool import Connect, PersonalSession, SessionPool, TokensUnavailable
from tools.mcp.oauth.provider import BotOAuthProvider, ClientStore
from tools.mcp.oauth.tokens import Held, PersonTokens
from tools.mcp.remote_tools import exposed_name
from tools.mcp.sampling import Sampler
from tools.mcp.server_requests import ServerRequests
from tools.mcp.stderr import ServerStderr
from tools.mcp.transports import HttpAnswers, new_client, open_transport

log = logging.getLogger(__name__)

NOBODY = Account("", "")  # whom `slack-agent tools` and `/agent tools` list for
BEGIN_TIMEOUT_S = 30.0  # discovery, registration and the capture of one sign-in
CHECK_CLIENT_ID = "slack-agent-check"  # the stand-in client of `slack-agent check`
REFUSALS = (401, 403)  # a token-less listing refused: "lists nothing without a token"


@dataclass(frozen=True)
class PersonalWiring:
    """What the bot gives the servers that sign each person in."""

    tokens_for: Callable[[Account, str], PersonTokens]  # (account, server name)
    clients_for: Callable[[str, str], ClientStore]  # (server name, redirect URI): registrations
    redirect_uri: str  # <oauth.redirect_base_url>/oauth/callback
    client_metadata_url: str | None  # <base>/oauth/client.json when https, else None
    client_name: str  # e.g. "slack-agent"
    max_sessions: int = 200
    idle_s: float = 300.0
    list_ttl_s: float = 60.0


@dataclass(frozen=True)
class Survey:
    """What a token-less attempt found (`slack-agent check`): the authorization request the
    SDK built after discovery (with a stand-in client: nothing registered), or that the
    server answered without asking for a token, or what is missing."""

    pending: PendingAuthorization | None = None
    answered: bool = False  # the server connected without a token
    problem: str | None = None  # what is missing, in words
    tools: tuple[str, ...] = ()  # listed without a token

    def registration(self, config: McpServerConfig, client_metadata_url: str | None) -> str:
        """How the bot's client is known to the authorization server, in words."""
        if config.oauth is not None and config.oauth.client_id is not None:
            return "pre-registered client"
        metadata = self.pending.oauth_metadata if self.pending is not None else None
        if should_use_client_metadata_url(metadata, client_metadata_url):
            return "client ID metadata document"
        if metadata is not None and metadata.registration_endpoint is not None:
            return "dynamic registration"
        return ""


@dataclass
class _Listed:
    first: mcp_types.ListToolsResult  # the first page as it came (from the cache or not)
    tools: list[Tool]


def partition(account: Account, issuer: str) -> str:
    """The response cache's partition for a person's entries: their own, per issuer."""
    return hashlib.sha256(f"{account.team}\0{account.user}\0{issuer}".encode()).hexdigest()


class PersonalServer:
    """One ``auth: oauth`` server of this process: each person's session and tools."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        wiring: PersonalWiring,
        *,
        sampler: Sampler | None = None,
        elicitation_timeout_s: float = 300.0,
    ) -> None:
        if config.url is None:
            raise ValueError(f"MCP server {name}: auth: oauth needs a url")
        self.name = name
        self.config = config
        self.wiring = wiring
        self.url = substitute(config.url)
        self.requests = ServerRequests(
            name, config, sampler=sampler, elicitation_timeout_s=elicitation_timeout_s
        )
        self.listing = ToolListing(name, config, self._not_a_person)
        self.cache_store = InMemoryResponseCacheStore()
        self.pool = SessionPool(
            name,
            self._connector(wiring.redirect_uri),
            max_sessions=wiring.max_sessions,
            idle_s=wiring.idle_s,
        )
        self._stderr = ServerStderr(name)
        self._lists: OrderedDict[Account, _Listed] = OrderedDict()
        self._anonymous: list[mcp_types.Tool] = []
        self._anonymous_at: float | None = None
        self._anonymous_lock = asyncio.Lock()
        self._public: list[mcp_types.Tool] = []  # the last listing a server said is public
        self._warned: set[str] = set()

    @property
    def sampler(self) -> Sampler | None:
        return self.requests.sampler

    @sampler.setter
    def sampler(self, sampler: Sampler | None) -> None:
        self.requests.sampler = sampler

    # --- the tools a person is offered ----------------------------------------------------

    async def tools_for(self, account: Account) -> list[Tool]:
        """The tools ``account`` is offered now (never raises: a server away or a token
        refused leaves the person with the connect-to-use tools)."""
        tokens = self.wiring.tokens_for(account, self.name)
        if isinstance(await tokens.fresh(), Held):
            try:
                return await self._own_tools(account)
            except SignInRequired:
                pass  # not a sign-in: the pending request is dropped
            except (TokensUnavailable, McpUnavailable, GrantError) as exc:
                log.info("MCP server %s: a person's tools are not listed now (%s)", self.name, exc)
        return await self.connect_to_use(account)

    async def tool_for(self, account: Account, name: str) -> Tool | None:
        return next((tool for tool in await self.tools_for(account) if tool.name == name), None)

    def left_out(self, name: str) -> None:
        """A tool of this server whose name another tool has: said once per name."""
        if name in self._warned:
            return
        self._warned.add(name)
        log.warning(
            "MCP server %s offers a tool named %s, which another tool already has; leaving it "
            "out for the people connected to it (give the server a prefix)",
            self.name,
            name,
        )

    async def _own_tools(self, account: Account) -> list[Tool]:
        """The connected person's own list (the SDK's cache first). Raises
        ``SignInRequired``, ``TokensUnavailable``, ``GrantError`` or ``McpUnavailable``."""

        async def listing(session: PersonalSession) -> list[Tool]:
            client = _open(session)
            first = await client.list_tools()  # page 1 through the response cache
            known = self._lists.get(account)
            if known is not None and known.first == first:
                self._lists.move_to_end(account)
                return known.tools
            pages: list[mcp_types.ListToolsResult] = []
            remotes = await listed(client, first, pages)
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS and all(
                page.cache_scope == "public" for page in pages
            ):
                self._public = remotes  # the server said anyone may see all of it
            tools = self._personal(self.listing.offered(remotes, self._call_for(account)))
            self._lists[account] = _Listed(first, tools)
            while len(self._lists) > self.wiring.max_sessions:
                self._lists.popitem(last=False)
            return tools

        return await self.pool.run(account, listing)

    def _call_for(self, account: Account) -> Callable[[str, dict[str, Any]], Any]:
        """A call of one of the person's tools, on their own session (``calls.py``'s path:
        progress, elicitation and sampling for the requester, errors in words)."""

        async def call(remote: str, arguments: dict[str, Any]) -> str:
            async def run(session: PersonalSession) -> str:
                return await Caller(self.name, session, self.requests).call(remote, arguments)

            try:
                return await self.pool.run(account, run)
            except (TokensUnavailable, GrantError) as exc:
                raise self._sign_in_error(exposed_name(self.config.prefix, remote), exc) from None

        return call

    def _sign_in_error(self, tool_name: str, exc: Exception) -> SignInFailed | SignInUnavailable:
        """What the model reads when a person's session could not be used for their sign-in:
        the authorization server refused it (``GrantRefused``: a wrong issuer, a refused
        registration), else its sign-in service is unavailable."""
        if isinstance(exc, GrantRefused):
            return SignInFailed(tool_name, "the person", self.name)
        return SignInUnavailable(tool_name, self.name)

    async def connect_to_use(self, account: Account) -> list[Tool]:
        """What a person who is not connected is offered: a copy of each tool listed without
        a token (or last listed as public), else the ``connect`` tool."""
        remotes = await self.anonymous()
        if not remotes:
            return [self._connect_tool(account)]
        copies = self.listing.offered(remotes, self._copy_call(account))
        return [
            tool.replace(
                description=f"Connect {self.name} to use this tool: calling it asks the person "
                f"to sign in. {tool.description}",
                per_person=True,
            )
            for tool in copies.values()
        ]

    async def listed_for_nobody(self) -> list[Tool]:
        """What a person who is not connected is offered (for listings: no session is
        opened, no person's token read)."""
        return await self.connect_to_use(NOBODY)

    def _copy_call(self, account: Account) -> Callable[[str, dict[str, Any]], Any]:
        """A connect-to-use copy's call, once its person is connected: the tool of that name
        on their own session."""

        async def call(remote: str, arguments: dict[str, Any]) -> Any:
            exposed = exposed_name(self.config.prefix, remote)
            try:
                own = await self._own_tools(account)
            except (TokensUnavailable, GrantError) as exc:
                raise self._sign_in_error(exposed, exc) from None
            tool = next((tool for tool in own if tool.remote_name == remote), None)
            if tool is None:
                raise ToolError(f"{exposed} is not available to your account on {self.name}.")
            return await tool.invoke(arguments)

        return call

    def _connect_tool(self, account: Account) -> Tool:
        async def invoke(arguments: dict[str, Any]) -> str:
            try:
                own = await self._own_tools(account)
            except (TokensUnavailable, GrantError) as exc:
                raise self._sign_in_error(tool.name, exc) from None
            names = ", ".join(sorted(tool.name for tool in own)) or "none"
            return f"Connected to {self.name}; its tools are offered from the next step: {names}"

        tool = Tool(
            name=exposed_name(self.config.prefix or f"{self.name}_", "connect"),
            description=f"Sign in to {self.name} to use its tools. Calling this asks the person "
            "to connect; after that its tools are offered.",
            parameters={"type": "object", "properties": {}},
            invoke=invoke,
            timeout_s=self.config.call_timeout_s,
            idempotent=True,
            source=f"mcp {self.name}",
            per_person=True,
        )
        return tool

    def _personal(self, tools: dict[str, Tool]) -> list[Tool]:
        return [tool.replace(per_person=True) for tool in tools.values()]

    async def _not_a_person(self, remote: str, arguments: dict[str, Any]) -> str:
        # ToolListing's default call: every tool of this server is built with a person's.
        raise ToolError(f"{remote} of {self.name} runs only as a person who connected.")

    # --- without a token --------------------------------------------------------------

    async def anonymous(self) -> list[mcp_types.Tool]:
        """The server's token-less listing (tried again every ``list_ttl_s``), else the last
        listing marked public; empty when there is neither."""
        async with self._anonymous_lock:
            at = self._anonymous_at
            if at is None or time.monotonic() - at >= self.wiring.list_ttl_s:
                self._anonymous = await self._list_without_token()
                self._anonymous_at = time.monotonic()
        return self._anonymous or self._public

    async def _list_without_token(self) -> list[mcp_types.Tool]:
        answers = HttpAnswers()
        transport = open_transport(self.config, "streamable_http", self._stderr, answers=answers)
        try:
            async with asyncio.timeout(self.config.connect_timeout_s):
                async with new_client(transport, "streamable_http", self.requests) as client:
                    return await listed(client)
        except Exception as exc:
            if answers.last_status not in REFUSALS:
                log.info(
                    "MCP server %s: no token-less listing (%s); keeping the last one",
                    self.name,
                    describe(exc),
                )
                return self._anonymous
            return []  # it lists nothing without a token

    # --- signing in -----------------------------------------------------------------------

    async def begin(
        self, account: Account, *, redirect_uri: str | None = None
    ) -> PendingAuthorization | None:
        """The person's authorization request, built by the SDK (discovery, registration,
        PKCE) and captured, not waited on; None when the server answered without asking for
        a token. ``redirect_uri`` overrides the wiring's. Ends as soon as discovery or
        registration fails: raises ``GrantRefused`` when the authorization server refuses
        (its metadata names another issuer, the resource metadata another server, the
        registration is refused, no authorization server is found) and ``GrantUnavailable``
        when the server or its authorization server cannot be reached, fails (5xx, 429) or
        takes too long; each with a fixed reason word, never the server's text."""
        connect = self._connector(redirect_uri or self.wiring.redirect_uri, MemoryTokens())
        return await self._capture(account, connect)

    async def survey(self) -> Survey:
        """Discovery as :meth:`begin` does it, with a stand-in client (the configured one
        when pre-registered) so that nothing registers; and the token-less listing."""
        seen: list[BotOAuthProvider] = []
        answers = HttpAnswers()
        redirect = self.wiring.redirect_uri
        stand_in = self._pre_registered(redirect) or OAuthClientInformationFull(
            client_id=CHECK_CLIENT_ID,
            redirect_uris=[AnyUrl(redirect)],
            token_endpoint_auth_method="none",
        )
        connect = self._connector(
            redirect, MemoryTokens(), client_info=stand_in, seen=seen, answers=answers
        )
        try:
            pending = await self._capture(Account("check", "check"), connect)
        except GrantRefused as refused:
            return Survey(problem=_refused(refused.reason, seen[0] if seen else None, self.url))
        except GrantUnavailable as failed:
            if answers.last_status is None:
                return Survey(problem=f"could not be reached at {self.url}")
            if failed.reason.startswith("status_"):
                code = failed.reason.removeprefix("status_")
                return Survey(problem=f"its authorization server answered HTTP {code}")
            return Survey(problem=_missing(seen[0] if seen else None, self.url))
        tools = tuple(tool.name for tool in await self.anonymous())
        if pending is None:
            return Survey(answered=True, tools=tools)
        if pending.oauth_metadata is None:
            return Survey(pending, problem=_missing(seen[0] if seen else None, self.url))
        return Survey(pending, tools=tools)

    async def _capture(self, account: Account, connect: Connect) -> PendingAuthorization | None:
        session = PersonalSession(self.name, account, connect)
        try:
            async with asyncio.timeout(BEGIN_TIMEOUT_S):
                await session.open()
        except SignInRequired as needed:
            return needed.pending
        except TimeoutError:
            raise GrantUnavailable("timeout") from None
        except (TokensUnavailable, McpUnavailable):
            raise GrantUnavailable("unreachable") from None
        finally:
            await session.close()
        return None

    # --- sessions -------------------------------------------------------------------------

    def _connector(
        self,
        redirect: str,
        tokens: PersonTokens | None = None,
        *,
        client_info: OAuthClientInformationFull | None = None,
        seen: list[BotOAuthProvider] | None = None,
        answers: HttpAnswers | None = None,
    ) -> Connect:
        """How a session's client is opened: the person's tokens (``tokens``: instead of
        theirs) in a provider signing its requests, the response cache in their partition."""

        @contextlib.asynccontextmanager
        async def connect(session: PersonalSession) -> AsyncIterator[Client]:
            theirs = tokens or self.wiring.tokens_for(session.account, self.name)
            found = await theirs.fresh()
            issuer = found.snapshot.issuer if isinstance(found, Held) else ""
            provider = self._provider(session, theirs, redirect, client_info)
            if seen is not None:
                seen.append(provider)
            cache = CacheConfig(
                store=self.cache_store,
                partition=partition(session.account, issuer),
                target_id=f"{self.name}@{self.url}",
                share_public=True,
                default_ttl_ms=int(self.wiring.list_ttl_s * 1000),
            )
            transport = open_transport(self.config, "streamable_http", self._stderr, auth=provider)
            async with new_client(
                transport, "streamable_http", self.requests, cache=cache
            ) as client:
                yield client

        return connect

    def _provider(
        self,
        session: PersonalSession,
        tokens: PersonTokens,
        redirect: str,
        client_info: OAuthClientInformationFull | None,
    ) -> BotOAuthProvider:
        oauth = self.config.oauth
        known = client_info or self._pre_registered(redirect)
        return BotOAuthProvider(
            self.url,
            client_metadata(
                redirect,
                client_name=self.wiring.client_name,
                token_endpoint_auth_method=oauth.auth_method
                if oauth is not None and oauth.client_id is not None
                else None,
            ),
            session.watched(tokens),
            on_pending=session.on_pending,
            on_unavailable=session.on_unavailable,
            on_failed=session.on_failed,
            client_info=known,
            clients=None if known is not None else self.wiring.clients_for(self.name, redirect),
            client_metadata_url=self.wiring.client_metadata_url,
            extra_scopes=" ".join(oauth.scopes) if oauth is not None and oauth.scopes else None,
        )

    def _pre_registered(self, redirect: str) -> OAuthClientInformationFull | None:
        """The client configured under ``oauth:`` (``client_id``), if any."""
        oauth = self.config.oauth
        if oauth is None or oauth.client_id is None:
            return None
        secret = substitute(oauth.client_secret) if oauth.client_secret is not None else None
        return OAuthClientInformationFull(
            client_id=substitute(oauth.client_id),
            client_secret=secret,
            token_endpoint_auth_method=oauth.auth_method,
            redirect_uris=[AnyUrl(redirect)],
        )

    async def close(self) -> None:
        await self.pool.close()


def _open(session: PersonalSession) -> Client:
    if session.client is None:
        raise McpUnavailable(f"The MCP server {session.server} is unavailable right now.")
    return session.client


def _refused(reason: str, provider: BotOAuthProvider | None, url: str) -> str:
    """Why discovery refused the server's authorization server, in words (`slack-agent
    check`)."""
    context = provider.context if provider is not None else None
    where = (context.auth_server_url if context is not None else None) or url
    if reason == "issuer":
        return f"the authorization server metadata for {where} names another issuer"
    if reason == "resource":
        return f"its protected resource metadata names another resource than {url}"
    return _missing(provider, url)


def _missing(provider: BotOAuthProvider | None, url: str) -> str:
    """What discovery did not find, in words (`slack-agent check`)."""
    context = provider.context if provider is not None else None
    if context is None or context.protected_resource_metadata is None:
        return f"no authorization server found (no protected resource metadata for {url})"
    if context.oauth_metadata is None:
        where = context.auth_server_url or url
        return f"no authorization server found (no authorization server metadata at {where})"
    return "its sign-in request could not be built"
