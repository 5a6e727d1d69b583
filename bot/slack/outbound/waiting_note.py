"""The note that a thread waits for a decision on an approval card (or for a person to
connect an MCP server), posted by the worker that finds the thread's later messages held
behind it (bot/turn/waiting_note.py): the card's link is built from the workspace's address
(auth.test) and the card's ts; who may decide, from the config, in the card's words
(bot/slack/blocks/deciders.py)."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.deciders import who_decides
from bot.slack.blocks.messages import message_text
from bot.slack.blocks.waiting_note import (
    WAITING,
    sign_in_waiting_text,
    waiting_blocks,
    waiting_text,
)
from bot.slack.client import TurnClient
from bot.slack.errors import sorted_for_delivery
from bot.slack.identity import BotIdentity
from bot.slack.outbound.tagging import find_own, tag
from bot.turn.model import Turn
from bot.turn.ports import Deadline
from bot.turn.store.approvals import ApprovalRequest
from permissions.approval import Deciders


class SlackWaitingNote:
    def __init__(self, client: AsyncWebClient, identity: BotIdentity, deciders: Deciders) -> None:
        self.client = client
        self.identity = identity
        self.deciders = deciders

    async def tell(
        self, requests: list[ApprovalRequest], wait: str, deadline: Deadline, *, look_first: bool
    ) -> None:
        first = requests[0]
        client = TurnClient(self.client, deadline)
        turn = Turn(first.team, first.channel, first.thread_ts, first.user, "", first.message_ts)
        with sorted_for_delivery():
            if look_first:
                for message in await find_own(client, turn, self.identity.me):
                    payload = message.payload or {}
                    if payload.get("kind") == WAITING and payload.get("ref") == wait:
                        return  # an earlier owner posted it
            await self.identity.load()
            link = (
                self.identity.permalink(first.channel, first.card_ts, first.thread_ts)
                if first.card_ts
                else ""
            )
            if not link.startswith("https://"):  # the workspace's address is not known
                link = ""
            text = (
                sign_in_waiting_text(first.user, [r.server for r in requests], link)
                if first.sign_in
                else waiting_text(
                    [r.tool for r in requests], link, who_decides(self.deciders, first.user)
                )
            )
            await client.chat_postMessage(
                channel=first.channel,
                thread_ts=first.thread_ts,
                text=message_text(text),
                blocks=waiting_blocks(text),
                metadata=tag(first.message_ts, first.entry, WAITING, ref=wait),
            )
