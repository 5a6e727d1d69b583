"""The slash command (``slack.command``, default ``/agent``). Replies are ephemeral."""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.slack.blocks import tool_list_text

ToolList = Callable[[str], Awaitable[list[tuple[str, str]]]]
SUBCOMMANDS = ("help", "tools")


def help_text(command: str) -> str:
    return "\n".join(
        [
            f"*{command}* commands:",
            f"• `{command} help` — this list",
            f"• `{command} tools` — the tools you may use",
        ]
    )


def register(app: AsyncApp, command: str, tools_for: ToolList) -> None:
    @app.command(command)
    async def on_command(ack: AsyncAck, body: dict[str, Any]) -> None:
        words = (body.get("text") or "").split()
        name = words[0].lower() if words else "help"
        if name == "help":
            await ack(text=help_text(command), response_type="ephemeral")
        elif name == "tools":
            tools = await tools_for(body.get("user_id") or "")
            await ack(text=tool_list_text(tools), response_type="ephemeral")
        else:
            close = difflib.get_close_matches(name, SUBCOMMANDS, n=1)
            hint = f" Did you mean `{command} {close[0]}`?" if close else ""
            await ack(
                text=f"I don't know `{name}`.{hint} Try `{command} help`.",
                response_type="ephemeral",
            )
