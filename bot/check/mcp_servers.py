"""The MCP servers, as `slack-agent check` sees them: each connects and lists its tools
within its connect timeout; two servers offering one name is a problem too. The servers stay
connected for the checks after it (the caller closes them)."""

from __future__ import annotations

from bot.check.findings import Finding, fail, ok
from bot.config.errors import ConfigError
from bot.process.services import Tools

SHOWN = 8  # tool names quoted per server


async def check_mcp(tools: Tools) -> list[Finding]:
    manager = tools.mcp
    if not manager.connections:
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
            shown = ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")
            found.append(ok(area, f"connected, {len(names)} tools listed: {shown}"))
        else:
            why = manager.not_listed(connection)
            found.append(fail(area, f"{why}: its tools are not listed"))
    return found
