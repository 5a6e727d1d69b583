"""The slash command (``slack.command``, default ``/agent``). Replies are ephemeral: in the
ack when ready within two seconds, else through the response_url as soon as they are."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.admin.commands import AdminCommands, Caller
from bot.slack.after_ack import AfterAck


def register(app: AsyncApp, command: str, commands: AdminCommands, later: AfterAck) -> None:
    @app.command(command)
    async def on_command(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        caller = Caller(
            team=body.get("team_id") or "",
            user=body.get("user_id") or "",
            channel=body.get("channel_id") or None,
        )
        await later.reply_in_time(ack, respond, commands.run(caller, body.get("text") or ""))
