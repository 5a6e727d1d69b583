"""A real MCP server (the mcp SDK's MCPServer) for the tests, over stdio, streamable HTTP
or the legacy SSE transport.

Usage: python -m tests.fakes.mcp_server stdio [--start-delay S] [--token=T] [--modern]
       python -m tests.fakes.mcp_server http PORT [--modern]
       python -m tests.fakes.mcp_server sse PORT

It speaks the handshake era (``initialize``, up to 2025-11-25: it refuses ``server/discover``
as such a server does), where it asks the client for sampling and elicitation while a call
runs; with ``--modern`` it also speaks 2026-07-28 (``server/discover``, stateless), where a
question is a result that says ``input_required`` (the ``*_modern`` tools).

Environment: WAREHOUSE_STARTS (a file: each start appends "pid time"), WAREHOUSE_CRASH (set:
crash with a traceback on stderr instead of starting), WAREHOUSE_EXTRA_TOOL (names,
comma-separated: list one more tool under each, e.g. "delete.everything,delete_all").
``--token``: said on stderr when it starts (and in the error when it crashes), as careless
servers do.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated, Literal

import mcp_types as types
from mcp.server import runner
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.utilities.types import Image
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

warnings.simplefilter("ignore")  # sampling and roots are deprecated in the newest protocol

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
TASK_ONLY = "batch_export"


class Warehouse(MCPServer):
    async def list_tools(self) -> list[types.Tool]:
        """One tool runs only as a task (execution.taskSupport: required)."""
        listed = await super().list_tools()
        for tool in listed:
            if tool.name == TASK_ONLY:
                tool.execution = types.ToolExecution(task_support="required")
        return listed


server = Warehouse("warehouse")


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
def stock_report() -> types.CallToolResult:
    """A sentence for people, and structured content with more in it."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="3 items are low on stock.")],
        structured_content={"low": ["flour", "sugar", "yeast"], "checked": 1200},
    )


@server.tool()
def shelf_photo() -> Image:
    """A photo of the shelf."""
    return Image(data=PIXEL, format="png")


@server.tool()
def big_photo() -> types.CallToolResult:
    """A 344 KB image, mirrored into structured content as server-filesystem does."""
    data = base64.b64encode(b"\x89PNG" + bytes(352_733)).decode()
    block = types.ImageContent(type="image", data=data, mime_type="image/png")
    return types.CallToolResult(
        content=[block],
        structured_content={"content": [block.model_dump(by_alias=True, mode="json")]},
    )


@server.tool()
def report_link() -> types.CallToolResult:
    """Links to the day's notes instead of returning them."""
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="Today's notes are ready."),
            types.ResourceLink(
                type="resource_link",
                uri="warehouse://notes/today",
                name="today's notes",
                mime_type="text/plain",
            ),
        ]
    )


@server.resource("warehouse://notes/today", mime_type="text/plain")
def notes_today() -> str:
    return "Flour delivery at 10:00. Sugar is low."


@server.tool(
    title="Delete everything",
    annotations=types.ToolAnnotations(destructive_hint=True, open_world_hint=False),
)
def delete_everything() -> str:
    """Dangerous; the tests deny it."""
    return "deleted"


@server.tool(
    title="Count pallets",
    annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
)
def count_pallets(aisle: int) -> str:
    """Pallets in an aisle (read-only)."""
    return f"aisle {aisle}: 7 pallets"


@server.tool(
    title="Make a directory",
    annotations=types.ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True
    ),
)
def make_directory(path: str) -> str:
    """Create a directory (annotated as the filesystem server's create_directory is: it
    changes things, and says it is not destructive)."""
    return f"made {path}"


@server.tool()
async def slow_report(seconds: float) -> str:
    """Takes a while."""
    await asyncio.sleep(seconds)
    return "report ready"


@server.tool()
async def long_count(go_file: str, ctx: Context) -> str:
    """Counts with progress: reports 2 of 5 with a message, then waits for go_file."""
    await ctx.report_progress(2, 5, "counting aisle 2")
    await asyncio.to_thread(_wait_for, Path(go_file))
    await ctx.report_progress(5, 5, "all counted")
    return "counted 5 aisles"


def _wait_for(path: Path) -> None:
    """Until the test creates ``path`` (its signal to go on)."""
    while not path.exists():
        time.sleep(0.05)


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Asks the client's model (sampling)."""
    result = await ctx.session.create_message(
        messages=[
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=question)
            )
        ],
        max_tokens=5000,
        system_prompt="Answer in one word.",
        related_request_id=ctx.request_id,
    )
    content = result.content
    said = content.text if isinstance(content, types.TextContent) else str(content)
    return f"the model ({result.model}) said: {said}"


def _color_question(question: str) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=5000,
        system_prompt="Answer in one word.",
    )


@server.tool()
async def sample_either_era(
    question: str, answer: Annotated[types.CreateMessageResult, Resolve(_color_question)]
) -> str:
    """Asks the client's model in either era: mid-call over the handshake, a result that says
    ``input_required`` on a 2026 connection (the SDK's resolvers)."""
    content = answer.content
    said = content.text if isinstance(content, types.TextContent) else str(content)
    return f"the model ({answer.model}) said: {said}"


@server.tool()
async def sample_repeatedly(times: int, ctx: Context) -> str:
    """Asks the client's model ``times`` times, one after another, in one call."""
    answers: list[str] = []
    refusals: list[str] = []
    for number in range(1, times + 1):
        try:
            result = await ctx.session.create_message(
                messages=[
                    types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text=f"Q{number}")
                    )
                ],
                max_tokens=10,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:  # the client's error for this request
            refusals.append(str(exc))
            continue
        content = result.content
        answers.append(content.text if isinstance(content, types.TextContent) else "?")
    said = f"{len(answers)} answered ({', '.join(answers)}); {len(refusals)} refused"
    return said + (f": {refusals[0]}" if refusals else "")


class Restock(BaseModel):
    shelf: str = Field(description="Where it goes, e.g. A3")
    count: int = Field(ge=1, le=100)
    urgent: bool = False
    size: Literal["small", "large"] = "small"


class Confirm(BaseModel):
    pass


@server.tool()
async def restock(item: str, ctx: Context) -> str:
    """Asks the person where and how much to restock (elicitation, a form)."""
    answer = await ctx.elicit(f"How should I restock {item}?", schema=Restock)
    if answer.action == "accept":
        return f"restocking {item}: {answer.data.model_dump()}"
    return f"restock {answer.action}"


def _restock_question(item: str) -> Elicit[Restock]:
    return Elicit(f"How should I restock {item}?", Restock)


@server.tool()
async def restock_either_era(
    item: str, plan: Annotated[ElicitationResult[Restock], Resolve(_restock_question)]
) -> str:
    """Asks the person how to restock, in either era: mid-call over the handshake, a result
    that says ``input_required`` on a 2026 connection (the SDK's resolvers)."""
    if isinstance(plan, AcceptedElicitation):
        return f"restocking {item}: {plan.data.model_dump()}"
    return f"restock {plan.action}"


@server.tool()
async def confirm_cleanup(ctx: Context) -> str:
    """Asks the person to confirm (elicitation without fields)."""
    answer = await ctx.elicit("Clean up the old records?", schema=Confirm)
    return f"cleanup {answer.action}"


@server.tool()
async def open_page(url: str, ctx: Context) -> str:
    """Asks the person to open a page (elicitation in URL mode)."""
    answer = await ctx.elicit_url("Sign in to the warehouse system", url, "sign-in")
    return f"page {answer.action}"


@server.tool()
def batch_export() -> str:
    """Runs only as a task."""
    return "exported"


@server.tool()
def broken(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"the warehouse system said no: {reason}")


@server.tool()
def whoami() -> str:
    """Environment the server was started with."""
    return os.environ.get("WAREHOUSE_TOKEN", "no token") + " @ " + os.getcwd()


@server.tool()
def client_info(ctx: Context) -> str:
    """How the client introduced itself: name version; the capabilities it declared."""
    params = ctx.session.client_params
    info = params.client_info if params else None
    capabilities = ctx.session.client_capabilities
    declared = [
        name
        for name in ("sampling", "elicitation", "roots")
        if capabilities is not None and getattr(capabilities, name) is not None
    ]
    return f"{info.name if info else '?'} {info.version if info else '?'}; {', '.join(declared)}"


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


def _extra_tool(name: str) -> None:
    def extra() -> str:
        return f"{name} from the start"

    server.add_tool(extra, name=name, description=f"Listed from the start: {name}")


async def _no_discover(ctx: object, params: types.RequestParams) -> types.DiscoverResult:
    """A handshake-era server does not know ``server/discover``."""
    raise MCPError(types.METHOD_NOT_FOUND, "Method not found: server/discover")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("port", nargs="?", type=int, default=0)
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--token", default="")
    parser.add_argument("--modern", action="store_true")
    args = parser.parse_args(argv[1:])
    if not args.modern:
        # A handshake-era server: ``server/discover`` is unknown, and over stdio a request
        # with the 2026 envelope does not open a 2026 connection (the SDK's server serves
        # whichever era the first request names).
        server._lowlevel_server.add_request_handler(
            "server/discover", types.RequestParams, _no_discover
        )
        runner._has_modern_envelope = lambda params: False
    if args.token:
        print(f"warehouse: signing in with --token={args.token}", file=sys.stderr, flush=True)
    starts = os.environ.get("WAREHOUSE_STARTS")
    if starts:
        with open(starts, "a") as file:
            file.write(f"{os.getpid()} {time.time()}\n")
    if os.environ.get("WAREHOUSE_CRASH"):
        print("warehouse: loading the stock database", file=sys.stderr, flush=True)
        refused = f" for --token={args.token}" if args.token else ""
        raise RuntimeError(f"the stock database is locked{refused}")
    for name in filter(None, os.environ.get("WAREHOUSE_EXTRA_TOOL", "").split(",")):
        _extra_tool(name.strip())
    if args.start_delay:
        print(f"warehouse: warming up for {args.start_delay:g} s", file=sys.stderr, flush=True)
        time.sleep(args.start_delay)
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "sse":
        server.run("sse", host="127.0.0.1", port=args.port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main(sys.argv)
