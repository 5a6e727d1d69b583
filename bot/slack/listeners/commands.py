"""The slash command (``slack.command``, default ``/agent``). Replies are ephemeral."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.admin.commands import AdminCommands, Caller


def register(app: AsyncApp, command: str, commands: AdminCommands) -> None:
    @app.command(command)
    async def on_command(ack: AsyncAck, body: dict[str, Any]) -> None:
        caller = Caller(
            team=body.get("team_id") or "",
            user=body.get("user_id") or "",
            channel=body.get("channel_id") or None,
        )
        reply = await commands.run(caller, body.get("text") or "")
        await ack(text=reply, response_type="ephemeral")
