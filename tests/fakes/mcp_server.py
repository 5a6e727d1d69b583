"""A real MCP server (the mcp SDK's MCPServer) for the tests, over stdio or streamable HTTP.

Usage: python -m tests.fakes.mcp_server stdio
       python -m tests.fakes.mcp_server http PORT
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer("warehouse")
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@server.tool()
def lookup_stock(item: str) -> str:
    """Stock of an item in the warehouse."""
    return f"{item}: 12 bags"


@server.tool()
def two_lines(item: str) -> list[str]:
    """Two text blocks."""
    return [f"first {item}", f"second {item}"]


@server.tool(structured_output=True)
def inventory_totals() -> dict[str, int]:
    """Totals as structured content."""
    return {"items": 1200, "low_stock": 3}


@server.tool()
def shelf_photo() -> Image:
    """A photo of the shelf."""
    return Image(data=PIXEL, format="png")


@server.tool()
async def slow_report(seconds: float) -> str:
    """Takes a while."""
    await asyncio.sleep(seconds)
    return "report ready"


@server.tool()
def broken(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"the warehouse system said no: {reason}")


@server.tool()
def delete_everything() -> str:
    """Dangerous; the tests deny it."""
    return "deleted"


@server.tool()
def whoami() -> str:
    """Environment the server was started with."""
    return os.environ.get("WAREHOUSE_TOKEN", "no token") + " @ " + os.getcwd()


@server.tool()
def server_pid() -> int:
    """The server process's id (tests kill it)."""
    return os.getpid()


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Adds a tool at run time and tells the client its tool list changed."""

    def extra() -> str:
        return f"{name} works"

    server.add_tool(extra, name=name, description=f"Added at run time: {name}")
    await ctx.notify_tools_changed()  # clients on the 2026 protocol
    await ctx.session.send_tool_list_changed()  # clients on the handshake protocol
    return f"added {name}"


def main(argv: list[str]) -> None:
    if argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))


if __name__ == "__main__":
    main(sys.argv)
