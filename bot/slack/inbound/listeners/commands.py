"""The slash command (``slack.command``, default ``/agent``). Replies are ephemeral: in the
ack when ready within two seconds, else through the response_url as soon as they are; a
``connect`` reply carries the person's start link as a link button."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.admin.commands import AdminCommands
from bot.admin.context import Caller, Reply
from bot.slack.blocks.sign_in import connect_blocks
from bot.slack.inbound.after_ack import AfterAck, Ephemeral


def ephemeral(reply: Reply) -> Ephemeral:
    """A subcommand's reply as Slack shows it."""
    if reply.link is None:
        return Ephemeral(reply.text)
    link = reply.link
    return Ephemeral(reply.text, connect_blocks(link.server, link.url, link.within))


def register(app: AsyncApp, command: str, commands: AdminCommands, later: AfterAck) -> None:
    @app.command(command)
    async def on_command(
        ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext
    ) -> None:
        # In a shared channel (Slack Connect) the command's team_id is the caller's own
        # workspace; the bot's is the one it is installed in (auth.test). None named: an
        # outside person (permissions/policy.py Person.external).
        caller_team = body.get("team_id") or ""
        installed = context.authorize_result.team_id if context.authorize_result else None
        caller = Caller(
            team=installed or caller_team,
            user=body.get("user_id") or "",
            channel=body.get("channel_id") or None,
            user_team=caller_team,
        )

        async def answer() -> Ephemeral:
            return ephemeral(await commands.run(caller, body.get("text") or ""))

        await later.reply_in_time(ack, respond, answer())
