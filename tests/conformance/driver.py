# ruff: noqa: E402 (an unimplemented extension is said before the costly imports)
"""The client under test for the official MCP conformance suite
(``@modelcontextprotocol/conformance``): the suite starts a scenario's server and runs this
program with the server's URL as its last argument and the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` (some scenarios add ``MCP_CONFORMANCE_CONTEXT``, JSON).

It speaks no MCP itself. It goes through the path the bot uses: the MCP manager connects to
the server as configured (a bare ``url``, as a user writes it), lists the tools it offers the
model, and runs calls as one round of a person's turn (``bot.agent.execution.execute_round``,
each call inside its call scope, behind the approval wrapper, for a person who can be asked:
this person approves every call and answers a question with the form's defaults, and
``true`` for a yes/no field).

The OAuth scenarios (``auth/*``) sign in the way the bot does, in two phases: the
connection's ``BotOAuthProvider`` (``tools/mcp/oauth/provider.py``) lets the SDK discover,
register and build the authorization request, and captures it instead of waiting; the
connection is closed, the driver plays the browser (it opens the captured URL without
following the redirect back and takes its ``code``, ``state`` and ``iss``) and exchanges the
code with ``complete_authorization`` (``tools/mcp/oauth/grants.py``), as the bot's callback
does; then it connects again with the token held in memory (``MemoryTokens``). A 403 asking
for more scope (step-up) is signed in again the same way, at most three sign-ins in all.

Exit status: 0 when the tools could be listed and called; the suite judges what it saw.
"""

from __future__ import annotations

import os
import sys

# Extensions the suite runs without scoring them, which the bot does not implement (OAuth
# client credentials, private_key_jwt, enterprise-managed authorization, DPoP, workload
# identity): said at once, before the MCP SDK's costly import (CI runs every scenario).
NOT_IMPLEMENTED = {
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
}
if __name__ == "__main__" and os.environ.get("MCP_CONFORMANCE_SCENARIO") in NOT_IMPLEMENTED:
    print("the bot does not implement this extension of the MCP spec", file=sys.stderr)
    sys.exit(1)

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.agent.execution import ExecutionSettings, execute_round
from bot.llm.response import ToolCall
from tools.approval import ApprovalToolset, Approved
from tools.call_context import Requester, for_requester
from tools.definition import Tool
from tools.mcp.config import McpConfig, McpServerConfig
from tools.mcp.manager import McpManager
from tools.mcp.oauth.grants import GrantError, client_metadata, complete_authorization
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.provider import BotOAuthProvider
from tools.mcp.oauth.tokens import Unavailable
from tools.questions import Answer, Question
from tools.toolset import StaticToolset

SERVER = "conformance"
REDIRECT_URI = "http://localhost:3000/callback"
# A client ID metadata document's address, for authorization servers that support them.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
MAX_SIGN_INS = 3  # for one run: a server that keeps refusing is not signed in to forever
log = logging.getLogger("conformance-driver")

# The calls a scenario expects, when it names no ``toolCalls`` in its context; any other
# scenario calls every tool it is offered, at once, as one round of a turn.
CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "tools_call": [("add_numbers", {"a": 5, "b": 3})],
    "sse-retry": [("test_reconnection", {})],
    "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
    "initialize": [],
    "json-schema-ref-no-deref": [],
}


class DefaultsAsker:
    """A person who accepts every question with the form's defaults."""

    async def ask(self, question: Question) -> Answer:
        properties = dict(question.schema.get("properties") or {})
        content: dict[str, Any] = {}
        for name, field in properties.items():
            if "default" in field:
                content[name] = field["default"]
            elif field.get("type") == "boolean":
                content[name] = True
        log.info("asked %r; answering %s", question.message, content)
        return Answer("accept", content)


class MemoryClients:
    """A dynamic registration's result, kept for the driver's later connections."""

    def __init__(self) -> None:
        self.client: OAuthClientInformationFull | None = None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def open_in_browser(pending: PendingAuthorization) -> tuple[str, str | None]:
    """The person's browser, signing in without being asked: it opens the captured
    authorization URL (the suite's authorization server approves at once) and reads the
    ``code`` and ``iss`` of the redirect back, without following it."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(pending.authorization_url, follow_redirects=False)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization server answered {response.status_code}")
    query = parse_qs(urlsplit(location).query)
    if "code" not in query:
        raise RuntimeError(f"no code in the redirect: {query.get('error')}")
    if query.get("state", [None])[0] != pending.state:
        raise RuntimeError("the redirect's state is not the request's")
    return query["code"][0], query.get("iss", [None])[0]


class SignIns:
    """The bot's sign-in path for one person and the scenario's server: each connection's
    ``BotOAuthProvider`` takes the tokens held in memory and captures a sign-in when the
    server asks for one; the driver then plays the browser and exchanges the code
    (``complete_authorization``), as the bot's callback does, and connects again."""

    def __init__(self, url: str, context: dict[str, Any]) -> None:
        self.url = url
        self.tokens = MemoryTokens(server_url=url)
        self.clients = MemoryClients()
        self.client_info: OAuthClientInformationFull | None = None
        self.made = 0
        if context.get("client_id"):  # pre-registered
            secret = context.get("client_secret")
            self.client_info = OAuthClientInformationFull(
                client_id=context["client_id"],
                client_secret=secret,
                redirect_uris=[AnyUrl(REDIRECT_URI)],
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
            )

    def provider(
        self,
        on_pending: Callable[[PendingAuthorization], object],
        on_unavailable: Callable[[Unavailable], object],
    ) -> BotOAuthProvider:
        return BotOAuthProvider(
            self.url,
            client_metadata(REDIRECT_URI, client_name="slack-agent conformance driver"),
            self.tokens,
            on_pending=on_pending,
            on_unavailable=on_unavailable,
            client_info=self.client_info,
            clients=self.clients,
            client_metadata_url=CLIENT_METADATA_URL,
        )

    async def finish(self, pending: PendingAuthorization) -> None:
        """The browser's part and the code exchange; the new token is held for the next
        connection."""
        self.made += 1
        what = "more access" if pending.step_up else "a sign-in"
        print(f"the server asks for {what}; signing in ({self.made} of {MAX_SIGN_INS})")
        code, iss = await open_in_browser(pending)
        self.tokens.keep(await complete_authorization(pending, code, iss))


async def approve(tool: Tool, arguments: dict[str, Any]) -> Approved:
    """The person approves every call a card asks them about."""
    return Approved()


def sample_arguments(tool: Tool) -> dict[str, Any]:
    """Arguments for a tool the scenario does not spell out: each required field's default,
    or a plain value of its type."""
    plain = {"string": "conformance", "number": 1, "integer": 1, "boolean": True}
    properties = dict(tool.parameters.get("properties") or {})
    arguments: dict[str, Any] = {}
    for name in tool.parameters.get("required") or []:
        field = properties.get(name) or {}
        if "default" in field:
            arguments[name] = field["default"]
        else:
            arguments[name] = plain.get(str(field.get("type")), "conformance")
    return arguments


def planned_calls(
    scenario: str, context: dict[str, Any], tools: dict[str, Tool]
) -> list[tuple[str, dict[str, Any]]]:
    if "toolCalls" in context:
        return [(call["name"], dict(call.get("arguments") or {})) for call in context["toolCalls"]]
    if scenario in CALLS:
        return CALLS[scenario]
    if scenario == "json-schema-2020-12-preservation":  # the schema the model is offered
        focal = tools.get("json_schema_2020_12_tool")
        return [("json_schema_echo", {"schema": focal.parameters})] if focal else []
    if scenario.startswith("auth/"):
        first = next(iter(tools.values()), None)
        return [(first.name, sample_arguments(first))] if first else []
    return [(name, sample_arguments(tool)) for name, tool in tools.items()]


def server_config(url: str) -> McpServerConfig:
    return McpServerConfig(url=url, connect_timeout_s=20.0, call_timeout_s=20.0)


async def run_round(manager: McpManager, scenario: str, context: dict[str, Any]) -> int:
    """List the tools the manager offers and run the scenario's calls as one round."""
    await manager.start()
    connection = manager.connections[SERVER]
    if not connection.connected.is_set():
        print(f"not connected: {manager.not_listed(connection)}", file=sys.stderr)
        return 1
    tools = {tool.name: tool for tool in manager.tools()}
    print(f"tools offered: {sorted(tools)}")
    calls = planned_calls(scenario, context, tools)
    if not calls:
        return 0
    requester = Requester(team="T0", user="U0", asker=DefaultsAsker())
    toolset = ApprovalToolset(
        for_requester(StaticToolset(list(tools.values())), requester), approve
    )
    model_calls = [
        ToolCall(id=f"call-{index}", name=name, arguments=json.dumps(arguments))
        for index, (name, arguments) in enumerate(calls)
    ]
    result = await execute_round(model_calls, toolset, ExecutionSettings(), round_number=1)
    for execution in result.executions:
        print(f"{execution.name}: {execution.outcome.value}: {execution.output[:300]}")
    return 0


async def run_signed_in(
    url: str, scenario: str, context: dict[str, Any], sign_ins: SignIns
) -> int | PendingAuthorization | Unavailable:
    """One connection whose requests are signed with the person's token: the round's exit
    status, or, when the server refuses the token (401, or 403 for more scope) and the
    provider captures a sign-in, the connection closed and the captured request."""
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[PendingAuthorization] = loop.create_future()
    unavailable: asyncio.Future[Unavailable] = loop.create_future()
    auth = sign_ins.provider(pending.set_result, unavailable.set_result)
    manager = McpManager(McpConfig(servers={SERVER: server_config(url)}), auth={SERVER: auth})
    work = asyncio.create_task(run_round(manager, scenario, context))
    try:
        waits: set[asyncio.Future[Any]] = {work, pending, unavailable}
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if work.done():
            return work.result()
        work.cancel()  # its request waits on the sign-in, which closing the session ends
        with contextlib.suppress(asyncio.CancelledError):
            await work
        return pending.result() if pending.done() else unavailable.result()
    finally:
        await manager.stop()


async def run(url: str, scenario: str, context: dict[str, Any]) -> int:
    if not scenario.startswith("auth/"):
        manager = McpManager(McpConfig(servers={SERVER: server_config(url)}))
        try:
            return await run_round(manager, scenario, context)
        finally:
            await manager.stop()
    sign_ins = SignIns(url, context)
    while True:
        outcome = await run_signed_in(url, scenario, context, sign_ins)
        if isinstance(outcome, int):
            return outcome
        if isinstance(outcome, Unavailable):
            print(f"the tokens are unavailable ({outcome.why})", file=sys.stderr)
            return 1
        if sign_ins.made == MAX_SIGN_INS:
            print(f"the server still refuses after {MAX_SIGN_INS} sign-ins", file=sys.stderr)
            return 1
        try:
            await sign_ins.finish(outcome)
        except (GrantError, RuntimeError) as failed:
            print(f"the sign-in failed: {failed}", file=sys.stderr)
            return 1


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    if len(sys.argv) < 2:
        print(f"usage: {sys.argv[0]} <server-url>", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    started = time.monotonic()
    try:
        return asyncio.run(run(sys.argv[-1], scenario, context))
    finally:
        print(f"{scenario}: the driver ran {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
