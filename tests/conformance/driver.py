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
``true`` for a yes/no field). The OAuth scenarios
(``auth/*``) give the connection the SDK's ``OAuthClientProvider`` with tokens in memory and
a redirect handler that follows the suite's authorization server non-interactively.

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
import json
import logging
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.agent.execution import ExecutionSettings, execute_round
from bot.llm.response import ToolCall
from tools.approval import ApprovalToolset, Approved
from tools.call_context import Requester, for_requester
from tools.definition import Tool
from tools.mcp.config import McpConfig, McpServerConfig
from tools.mcp.manager import McpManager
from tools.questions import Answer, Question
from tools.toolset import StaticToolset

SERVER = "conformance"
REDIRECT_URI = "http://localhost:3000/callback"
# A client ID metadata document's address, for authorization servers that support them.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
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


class MemoryTokens:
    """The OAuth client's registration and tokens, kept in memory (``TokenStorage``)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The person's browser, signing in without being asked: it opens the authorization URL
    (the suite's authorization server approves at once) and hands the redirect's ``code``,
    ``state`` and ``iss`` to the client."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None

    async def open(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise RuntimeError(f"the authorization server answered {response.status_code}")
        query = parse_qs(urlsplit(location).query)
        if "code" not in query:
            raise RuntimeError(f"no code in the redirect: {query.get('error')}")
        self.result = AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError("the authorization server redirected nowhere")
        result, self.result = self.result, None
        return result


def oauth(url: str, context: dict[str, Any]) -> OAuthClientProvider:
    """The SDK's OAuth client for the connection (discovery, registration, PKCE, resource
    indicators, ``iss`` checks, scope step-up); a pre-registered client when the scenario
    gives one."""
    tokens = MemoryTokens()
    if context.get("client_id"):
        secret = context.get("client_secret")
        tokens.client = OAuthClientInformationFull(
            client_id=context["client_id"],
            client_secret=secret,
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
    browser = Browser()
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="slack-agent conformance driver",
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=tokens,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
        client_metadata_url=CLIENT_METADATA_URL,
    )


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


async def run(url: str, scenario: str, context: dict[str, Any]) -> int:
    auth = {SERVER: oauth(url, context)} if scenario.startswith("auth/") else {}
    manager = McpManager(McpConfig(servers={SERVER: server_config(url)}), auth=auth)
    await manager.start()
    try:
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
    finally:
        await manager.stop()


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
