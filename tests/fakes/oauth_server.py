"""A real OAuth 2.1 authorization server for the tests, from the mcp SDK's own server pieces.

``create_auth_routes`` serves the metadata, ``/authorize``, ``/token`` (PKCE checked by the
SDK's token handler), ``/register`` and ``/revoke``; ``Authority`` is its provider, in memory.
The test plays the person: ``/authorize`` redirects to ``/login?request=...``, and the test's
"browser" adds ``&user=alice`` (or ``&deny=1``) to pick who signs in (with ``default_user``,
``/authorize`` skips the page); the login page issues a code for that subject and redirects
to the client's ``redirect_uri`` with ``state`` and ``iss``. Access tokens live
``expires_in`` seconds; refresh tokens rotate, and one presented again after its rotation
revokes its whole family (a double refresh shows). Every switch is read per request. For the
resource server and the tests: ``/_test/introspect`` (POST ``token``), ``/_test/revoke?user=``,
``/_test/counts``, ``/_test/requests`` (what the authorization and token requests carried, no
secret), ``/_test/status/<code>`` (answers with that status: an endpoint that fails),
``/_test/client-metadata`` (POST a client ID metadata document, as if the server had fetched
it: tests have no https), ``/_test/secrets`` (every secret it issued or was sent: tokens,
codes, states, verifiers, client secrets; for a test that looks for them where they must not
be), ``/_test/switches`` (POST ``expires_in=S``: the life of the tokens issued from now on).

In-process (a thread, for fast tests): ``with AuthServer(Switches(...)) as server:``.
As a process: ``python -m tests.fakes.oauth_server PORT [--expires-in S] [--cimd] [--iss
send|omit|wrong] [--no-advertise-iss] [--no-registration] [--register-status CODE]
[--wrong-metadata-issuer] [--no-revocation] [--client ID:SECRET:METHOD:REDIRECT] [--user
NAME]`` (``AuthServerProcess``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs

import uvicorn
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, cors_middleware, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPES = ["files:read", "files:write", "offline_access"]
WRONG_ISSUER = "https://evil.example.com"


@dataclass
class Switches:
    """How the server behaves; a test may change them at any time (each request reads them)."""

    expires_in: int = 3600  # access tokens' life, seconds
    cimd: bool = False  # advertise client ID metadata documents
    iss: Literal["send", "omit", "wrong"] = "send"  # iss in the authorization response
    advertise_iss: bool = True  # authorization_response_iss_parameter_supported
    registration: bool = True  # dynamic client registration
    register_status: int | None = None  # set: /register answers this status (a refusal, 5xx)
    wrong_metadata_issuer: bool = False  # the metadata names WRONG_ISSUER as its issuer
    revocation: bool = True  # a revocation endpoint
    default_user: str | None = None  # set: /authorize signs this person in at once
    scopes: list[str] = field(default_factory=lambda: list(SCOPES))


@dataclass
class Family:
    """One grant: the tokens issued since one code, rotated together."""

    subject: str
    client_id: str
    scopes: list[str]
    resource: str | None
    revoked: bool = False


@dataclass
class Issued:
    family: Family
    expires_at: int | None
    used: bool = False  # a refresh token already exchanged


class Authority(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """The server's state and its ``OAuthAuthorizationServerProvider``."""

    def __init__(self, issuer: str, switches: Switches) -> None:
        self.issuer = issuer
        self.switches = switches
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.documents: dict[str, OAuthClientInformationFull] = {}  # CIMD, by client_id URL
        self.requests: dict[str, tuple[str, AuthorizationParams]] = {}  # /login?request=
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, Issued] = {}
        self.refresh: dict[str, Issued] = {}
        self.grants: Counter[str] = Counter()  # token grants by type
        self.counts: Counter[str] = Counter()  # revocations, refusals, registrations, ...
        self.authorize_log: list[dict[str, Any]] = []
        self.token_log: list[dict[str, Any]] = []
        self.secrets_seen: set[str] = set()  # every secret this server issued or was sent

    # The registry of clients.

    def add_client(self, client_id: str, secret: str | None, method: str, redirect: str) -> None:
        """A pre-registered client."""
        self.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            token_endpoint_auth_method=method,
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
        )
        if secret:
            self.secrets_seen.add(secret)

    def add_document(self, document: dict[str, Any]) -> None:
        """A client ID metadata document, as if fetched from its client_id URL."""
        client = OAuthClientInformationFull.model_validate(
            {**document, "token_endpoint_auth_method": "none"}
        )
        self.documents[client.client_id] = client

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        client = self.clients.get(client_id)
        if client is None and self.switches.cimd:
            client = self.documents.get(client_id)
        if client is None:
            return None
        # Any scope this server knows may be asked for (a step-up asks for more later).
        return client.model_copy(update={"scope": " ".join(self.switches.scopes)})

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.counts["registrations"] += 1
        self.clients[client_info.client_id] = client_info
        if client_info.client_secret:
            self.secrets_seen.add(client_info.client_secret)

    # Authorization.

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        request = secrets.token_urlsafe(16)
        self.requests[request] = (client.client_id, params)
        self.authorize_log.append(
            {
                "client_id": client.client_id,
                "scope": " ".join(params.scopes) if params.scopes is not None else None,
                "resource": params.resource,
                "redirect_uri": str(params.redirect_uri),
            }
        )
        if params.state:
            self.secrets_seen.add(params.state)
        if self.switches.default_user is not None:  # signs in at once, as that person
            location = self.login(request, self.switches.default_user, deny=False)
            assert location is not None
            return location
        return f"{self.issuer}/login?request={request}"

    def login(self, request: str, user: str | None, deny: bool) -> str | None:
        """Where the browser goes next: the client's redirect URI with a code for ``user``
        (or ``error=access_denied``); None for an unknown request."""
        found = self.requests.pop(request, None)
        if found is None:
            return None
        client_id, params = found
        iss = {"send": self.issuer, "omit": None, "wrong": WRONG_ISSUER}[self.switches.iss]
        if deny:
            return construct_redirect_uri(
                str(params.redirect_uri), error="access_denied", state=params.state, iss=iss
            )
        code = secrets.token_urlsafe(32)
        self.secrets_seen.add(code)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=user,
        )
        self.counts["logins"] += 1
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=iss
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.grants["authorization_code"] += 1
        family = Family(
            subject=authorization_code.subject or "",
            client_id=client.client_id,
            scopes=list(authorization_code.scopes),
            resource=authorization_code.resource,
        )
        return self._issue(family)

    def _issue(self, family: Family) -> OAuthToken:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        expires_in = self.switches.expires_in
        self.access[access] = Issued(family, int(time.time() + expires_in))
        self.refresh[refresh] = Issued(family, None)
        self.secrets_seen.update((access, refresh))
        return OAuthToken(
            access_token=access,
            expires_in=expires_in,
            scope=" ".join(family.scopes),
            refresh_token=refresh,
        )

    # Refreshing.

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        issued = self.refresh.get(refresh_token)
        if issued is None or issued.family.revoked:
            return None
        if issued.used:  # presented again after its rotation: someone holds a copy
            issued.family.revoked = True
            self.counts["replayed_refreshes"] += 1
            return None
        family = issued.family
        return RefreshToken(
            token=refresh_token,
            client_id=family.client_id,
            scopes=family.scopes,
            resource=family.resource,
            subject=family.subject,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        issued = self.refresh[refresh_token.token]
        if issued.used or issued.family.revoked:  # pragma: no cover (load refuses it first)
            raise TokenError("invalid_grant", "refresh token already used")
        issued.used = True
        self.grants["refresh_token"] += 1
        return self._issue(issued.family)

    # Using and revoking.

    async def load_access_token(self, token: str) -> AccessToken | None:
        issued = self.access.get(token)
        if issued is None or issued.family.revoked:
            return None
        if issued.expires_at is not None and issued.expires_at < time.time():
            return None
        family = issued.family
        return AccessToken(
            token=token,
            client_id=family.client_id,
            scopes=family.scopes,
            expires_at=issued.expires_at,
            resource=family.resource,
            subject=family.subject,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        issued = self.access.get(token.token) or self.refresh.get(token.token)
        if issued is not None:
            issued.family.revoked = True
        self.counts["revocations"] += 1

    def revoke_user(self, user: str) -> int:
        """Revoke every grant of ``user`` (as the person would on the server's site)."""
        families = {id(i.family): i.family for i in [*self.access.values(), *self.refresh.values()]}
        revoked = 0
        for family in families.values():
            if family.subject == user and not family.revoked:
                family.revoked = True
                revoked += 1
        return revoked

    def introspect(self, token: str) -> dict[str, Any]:
        issued = self.access.get(token)
        if issued is None or issued.family.revoked:
            return {"active": False}
        if issued.expires_at is not None and issued.expires_at < time.time():
            return {"active": False}
        family = issued.family
        return {
            "active": True,
            "sub": family.subject,
            "client_id": family.client_id,
            "scope": " ".join(family.scopes),
            "exp": issued.expires_at,
            "aud": family.resource,
        }

    def report(self) -> dict[str, Any]:
        refused = sum(
            1
            for entry in self.token_log
            if entry["grant_type"] == "refresh_token" and entry.get("status") != 200
        )
        return {"grants": dict(self.grants), "refused_refreshes": refused, **dict(self.counts)}


class TokenRequestLog:
    """Records what each token request carried (no secret: the grant type, the client, how it
    authenticated, ``resource``), then passes it on unchanged."""

    def __init__(self, app: ASGIApp, authority: Authority) -> None:
        self.app = app
        self.authority = authority

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/token" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        form = {key: values[0] for key, values in parse_qs(body.decode()).items()}
        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        basic = headers.get("authorization", "").startswith("Basic ")
        auth = "basic" if basic else ("post" if "client_secret" in form else "none")
        entry: dict[str, Any] = {
            "grant_type": form.get("grant_type"),
            "client_id": form.get("client_id"),
            "resource": form.get("resource"),
            "auth": auth,
            "status": None,
        }
        self.authority.token_log.append(entry)
        self.authority.secrets_seen.update(
            value for key, value in form.items() if key in ("code_verifier", "client_secret")
        )
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def answer(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            await send(message)

        await self.app(scope, replay, answer)


class Switched:
    """A route that answers 404 while its switch is off, and ``status()`` when that says
    one (an OAuth error body naming it)."""

    def __init__(
        self, app: ASGIApp, on: Callable[[], bool], status: Callable[[], int | None] = lambda: None
    ) -> None:
        self.app = app
        self.on = on
        self.status = status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.on():
            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        status = self.status()
        if status is not None:
            error = "invalid_client_metadata" if status < 500 else "server_error"
            body = {"error": error, "error_description": "told to"}
            await JSONResponse(body, status_code=status)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def metadata_of(authority: Authority) -> OAuthMetadata:
    """The server's metadata as its switches are now."""
    switches = authority.switches
    issuer = AnyHttpUrl(authority.issuer)
    metadata = build_metadata(
        issuer,
        None,
        ClientRegistrationOptions(enabled=switches.registration, valid_scopes=switches.scopes),
        RevocationOptions(enabled=switches.revocation),
    ).model_dump(mode="json", exclude_none=True)
    # exactly as the resource server names it, unless told to name another
    metadata["issuer"] = WRONG_ISSUER if switches.wrong_metadata_issuer else authority.issuer
    metadata["token_endpoint_auth_methods_supported"] = [
        "client_secret_basic",
        "client_secret_post",
        "none",
    ]
    if switches.cimd:
        metadata["client_id_metadata_document_supported"] = True
    if switches.advertise_iss:
        metadata["authorization_response_iss_parameter_supported"] = True
    return OAuthMetadata.model_validate(metadata)


def build_app(authority: Authority) -> Starlette:
    switches = authority.switches
    routes = create_auth_routes(
        authority,
        AnyHttpUrl(authority.issuer),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=switches.scopes
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    for route in routes:
        if route.path == "/register":
            route.app = Switched(
                route.app, lambda: switches.registration, lambda: switches.register_status
            )
        elif route.path == "/revoke":
            route.app = Switched(route.app, lambda: switches.revocation)

    async def metadata(request: Request) -> Response:
        return await MetadataHandler(metadata_of(authority)).handle(request)

    routes[0] = Route(
        "/.well-known/oauth-authorization-server",
        endpoint=cors_middleware(metadata, ["GET", "OPTIONS"]),
        methods=["GET", "OPTIONS"],
    )

    async def login(request: Request) -> Response:
        query = request.query_params
        user = query.get("user") or switches.default_user
        deny = query.get("deny") == "1"
        if user is None and not deny:
            return PlainTextResponse("who signs in? add &user=<name>", status_code=400)
        location = authority.login(query.get("request", ""), user, deny)
        if location is None:
            return PlainTextResponse("unknown or used authorization request", status_code=400)
        return RedirectResponse(location, status_code=302)

    async def introspect(request: Request) -> Response:
        form = await request.form()
        return JSONResponse(authority.introspect(str(form.get("token", ""))))

    async def revoke_user(request: Request) -> Response:
        revoked = authority.revoke_user(request.query_params.get("user", ""))
        return JSONResponse({"revoked": revoked})

    async def counts(request: Request) -> Response:
        return JSONResponse(authority.report())

    async def requests(request: Request) -> Response:
        return JSONResponse({"authorize": authority.authorize_log, "token": authority.token_log})

    async def client_metadata(request: Request) -> Response:
        authority.add_document(json.loads(await request.body()))
        return JSONResponse({"ok": True})

    async def secrets_seen(request: Request) -> Response:
        return JSONResponse({"secrets": sorted(authority.secrets_seen)})

    async def switch(request: Request) -> Response:
        form = await request.form()
        if "expires_in" in form:
            switches.expires_in = int(str(form["expires_in"]))
        return JSONResponse({"expires_in": switches.expires_in})

    async def status(request: Request) -> Response:
        code = int(request.path_params["code"])
        return JSONResponse({"error": "server_error", "error_description": "told to"}, code)

    routes += [
        Route("/login", login),
        Route("/_test/status/{code:int}", status, methods=["GET", "POST"]),
        Route("/_test/introspect", introspect, methods=["POST"]),
        Route("/_test/revoke", revoke_user, methods=["GET", "POST"]),
        Route("/_test/counts", counts),
        Route("/_test/requests", requests),
        Route("/_test/client-metadata", client_metadata, methods=["POST"]),
        Route("/_test/secrets", secrets_seen),
        Route("/_test/switches", switch, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(TokenRequestLog, authority=authority)
    return app


def bound_socket(port: int = 0) -> socket.socket:
    """A listening socket on loopback (port 0: a free one, known before the app is built)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


class ThreadedServer:
    """An ASGI app under uvicorn in a thread of this process, on ``sock``."""

    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        self.sock = sock
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, args=([sock],), daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


class AuthServer:
    """The authorization server in a thread; ``authority`` is its live state."""

    def __init__(self, switches: Switches | None = None) -> None:
        self.sock = bound_socket()
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.authority = Authority(self.url, switches or Switches())
        self._server = ThreadedServer(build_app(self.authority), self.sock)

    @property
    def switches(self) -> Switches:
        return self.authority.switches

    def __enter__(self) -> AuthServer:
        self._server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.stop()


class AuthServerProcess:
    """``python -m tests.fakes.oauth_server PORT ...`` as a process a test can share with
    other processes."""

    def __init__(self, *options: str) -> None:
        self.options = options
        sock = bound_socket()
        self.port = sock.getsockname()[1]
        sock.close()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.oauth_server", str(self.port), *self.options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_listening(self.port, self.process)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the test server did not start")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--expires-in", type=int, default=3600)
    parser.add_argument("--cimd", action="store_true")
    parser.add_argument("--iss", choices=["send", "omit", "wrong"], default="send")
    parser.add_argument("--no-advertise-iss", action="store_true")
    parser.add_argument("--no-registration", action="store_true")
    parser.add_argument("--register-status", type=int, default=None)
    parser.add_argument("--wrong-metadata-issuer", action="store_true")
    parser.add_argument("--no-revocation", action="store_true")
    parser.add_argument("--user", default=None, help="/authorize signs this person in at once")
    parser.add_argument(
        "--client", action="append", default=[], help="ID:SECRET:METHOD:REDIRECT (pre-registered)"
    )
    args = parser.parse_args(argv[1:])
    switches = Switches(
        expires_in=args.expires_in,
        cimd=args.cimd,
        iss=args.iss,
        advertise_iss=not args.no_advertise_iss,
        registration=not args.no_registration,
        register_status=args.register_status,
        wrong_metadata_issuer=args.wrong_metadata_issuer,
        revocation=not args.no_revocation,
        default_user=args.user,
    )
    url = f"http://127.0.0.1:{args.port}"
    authority = Authority(url, switches)
    for spec in args.client:
        client_id, secret, method, redirect = spec.split(":", 3)
        authority.add_client(client_id, secret or None, method, redirect)
    sock = bound_socket(args.port)
    config = uvicorn.Config(build_app(authority), log_level="warning", timeout_graceful_shutdown=1)
    asyncio.run(uvicorn.Server(config).serve([sock]))


if __name__ == "__main__":
    main(sys.argv)
