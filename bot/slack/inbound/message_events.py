"""Message events past Bolt: the short way from Slack's most frequent requests to the ack.

Bolt's dispatch (its request object, its middleware chain, matching every listener,
injecting the listener's arguments, a new Web API client per request) cost about 0.1 ms of
CPU per mention, 40% of the ingress's work, and a burst of events is acknowledged one after
another by one event loop. For an ``event_callback`` whose event is an ``app_mention`` or a
``message`` none of it adds anything: the HTTP layer has checked the signature
(bot/slack/inbound/http.py), auth.test has named the bot (bot/slack/identity.py), and
``classify`` drops the bot's own messages as Bolt's self-event filter would. So these go
straight to :meth:`Ingress.receive`, and Slack gets what Bolt would have answered: 200 once
queued (or ignored), 503 in HTTP mode or no ack in Socket Mode when Redis is down
(bot/slack/inbound/storage_down.py), 500 for any other failure. Every other request, and
every request while auth.test has not answered, goes to Bolt.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.response import BoltResponse

from bot.slack.identity import BotIdentity
from bot.slack.inbound.classify import Identity, shared_channel
from bot.slack.inbound.ingress import Ingress
from bot.slack.inbound.storage_down import RefusalLog, is_storage_down, storage_down_response

log = logging.getLogger(__name__)

MESSAGE_EVENTS = frozenset({"app_mention", "message"})


def message_event(body: Any) -> dict[str, Any] | None:
    """The event of a message event callback (a mention or a message), else None (pure)."""
    if not isinstance(body, dict) or body.get("type") != "event_callback":
        return None
    event = body.get("event")
    if not isinstance(event, dict) or event.get("type") not in MESSAGE_EVENTS:
        return None
    return event


class MessageEvents:
    def __init__(
        self, ingress: Ingress, identity: BotIdentity, refusals: RefusalLog | None = None
    ) -> None:
        self.ingress = ingress
        self.identity = identity
        self.refusals = refusals or RefusalLog()  # what Redis being away refused

    def me(self, body: dict[str, Any]) -> Identity | None:
        """Who the bot is, as Bolt's context would say (auth.test's answer); None while
        auth.test has not answered."""
        result = self.identity.result
        if result is None:
            return None
        return Identity(
            team_id=str(result.get("team_id") or body.get("team_id") or ""),
            bot_user_id=result.get("user_id") or None,
            bot_id=result.get("bot_id") or None,
        )

    async def answer(self, body: Any) -> BoltResponse | None:
        """Slack's answer to ``body`` when it is a message event; None: it is Bolt's."""
        event = message_event(body)
        me = self.me(body) if event is not None else None
        if event is None or me is None:
            return None
        try:
            await self.ingress.receive(
                event, str(body.get("event_id") or ""), me, shared=shared_channel(body)
            )
        except Exception as error:
            if is_storage_down(error):
                return await storage_down_response(error, body, None, self.refusals)
            log.exception("handling a Slack request failed", exc_info=error)
            return BoltResponse(status=500, body="")
        return BoltResponse(status=200, body="")
