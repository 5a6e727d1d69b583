"""The MCP servers, as `slack-agent check` sees them: each connects and lists its tools
within its connect timeout; two servers offering one name is a problem too. The servers stay
connected for the checks after it (the caller closes them).

A server that signs each person in (``auth: oauth``) has no shared connection: its line says
what its discovery found, run as a sign-in would run it but with a stand-in client so that
nothing registers (``PersonalServer.survey``): the authorization server's issuer, how the bot's
client is known to it (pre-registered, a client ID metadata document, or dynamic
registration), the scopes a sign-in asks for, and what it lists without a token; or what is
missing."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bot.check.findings import Finding, fail, ok
from bot.config.errors import ConfigError
from bot.process.services import Tools

if TYPE_CHECKING:
    from tools.mcp.oauth.personal import PersonalServer

SHOWN = 8  # tool names quoted per server
SIGNS_IN = "signs each person in"


async def check_mcp(tools: Tools) -> list[Finding]:
    manager = tools.mcp
    if not manager.connections and not manager.personal:
        return []
    found: list[Finding] = []
    try:
        await tools.start()
    except ConfigError as exc:
        found.append(fail("mcp", str(exc)))
    for connection in manager.connections.values():
        area = f"mcp {connection.name}"
        if connection.connected.is_set():
            names = sorted(connection.tools)
            found.append(ok(area, f"connected, {len(names)} tools listed: {_shown(names)}"))
        else:
            why = manager.not_listed(connection)
            found.append(fail(area, f"{why}: its tools are not listed"))
    found += await asyncio.gather(*(personal_line(s) for s in manager.personal.values()))
    return found


async def personal_line(server: PersonalServer) -> Finding:
    """One server that signs each person in: what a sign-in would find (nothing registers)."""
    area = f"mcp {server.name}"
    survey = await server.survey()
    listed = list(survey.tools)
    if listed:
        without = f"{len(listed)} tools listed without a token (offered as connect-to-use)"
    else:
        without = "lists nothing without a token"
    if survey.problem is not None:
        return fail(area, f"{SIGNS_IN}, but {survey.problem}")
    if survey.answered or survey.pending is None:
        return ok(
            area,
            f"{SIGNS_IN}: connects without a token (a sign-in is asked for at the first call "
            f"it refuses); {without}",
        )
    pending = survey.pending
    registration = survey.registration(server.config, server.wiring.client_metadata_url)
    if not registration:
        return fail(
            area,
            f"{SIGNS_IN}, but its authorization server {pending.issuer} offers no way to "
            "register the bot (no registration endpoint, no client ID metadata documents): "
            f"give mcp.servers.{server.name}.oauth.client_id",
        )
    scopes = f", scopes {pending.scope}" if pending.scope else ""
    return ok(area, f"{SIGNS_IN}: issuer {pending.issuer}, {registration}{scopes}; {without}")


def _shown(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")
