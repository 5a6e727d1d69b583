"""Slack's 3-second contract for requests that are not message events.

With ``process_before_response`` Bolt sends the ack only when the listener returns, so a
listener that waits on Slack (a ``users.info`` for a role, ``views.publish``, a greeting)
can miss the 3 seconds when Slack is slow. Listeners here acknowledge first and finish their
Slack work afterwards, in tracked background tasks; a slash command answers in its ack when
the reply is ready in time, else through its response_url once it is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.slack.background import Background
from bot.slack.inbound.storage_down import STORAGE_DOWN_TEXT, is_storage_down

log = logging.getLogger(__name__)

REPLY_IN_ACK_S = 2.0  # a reply ready by then goes in the ack; later ones through respond()
FAILED_TEXT = "Sorry, that did not work. Please try again in a minute."


@dataclass(frozen=True)
class Ephemeral:
    """A reply only its person sees: text, and Block Kit when it has more than words."""

    text: str
    blocks: list[dict[str, Any]] | None = None

    def fields(self) -> dict[str, Any]:
        found: dict[str, Any] = {"text": self.text, "response_type": "ephemeral"}
        if self.blocks is not None:
            found["blocks"] = self.blocks
        return found


def _ephemeral(reply: str | Ephemeral) -> Ephemeral:
    return reply if isinstance(reply, Ephemeral) else Ephemeral(reply)


class AfterAck:
    def __init__(self) -> None:
        self.background = Background()

    def spawn(
        self, work: Coroutine[Any, Any, Any], *, respond: AsyncRespond | None, what: str
    ) -> asyncio.Task[Any]:
        """Finish ``work`` after the ack. A failure is logged; the person, when they can be
        told (``respond``), gets plain words."""
        return self.background.spawn(self._guarded(work, respond, what))

    async def reply_in_time(
        self, ack: AsyncAck, respond: AsyncRespond, reply: Awaitable[str | Ephemeral]
    ) -> None:
        """Ack with ``reply`` if it is ready within REPLY_IN_ACK_S (its errors then go to
        the app's error handler), else ack now and send it through the response_url."""
        task = asyncio.ensure_future(reply)
        await asyncio.wait({task}, timeout=REPLY_IN_ACK_S)
        if task.done():
            await ack(**_ephemeral(task.result()).fields())
            return
        await ack()
        self.spawn(_respond(task, respond), respond=respond, what="a slash command")

    async def settle(self) -> None:
        await self.background.settle()

    async def close(self) -> None:
        await self.background.close()

    @staticmethod
    async def _guarded(
        work: Coroutine[Any, Any, Any], respond: AsyncRespond | None, what: str
    ) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            text = STORAGE_DOWN_TEXT if is_storage_down(exc) else FAILED_TEXT
            if is_storage_down(exc):
                log.warning("Redis is unreachable while finishing %s (%s)", what, exc)
            else:
                log.exception("finishing %s failed", what)
            if respond is not None and respond.response_url:
                try:
                    await respond(text=text, response_type="ephemeral", replace_original=False)
                except Exception as told:
                    log.warning("could not tell the person either: %s", type(told).__name__)


async def _respond(reply: asyncio.Future[str | Ephemeral], respond: AsyncRespond) -> None:
    answer = _ephemeral(await reply)
    await respond(**answer.fields(), replace_original=False)
