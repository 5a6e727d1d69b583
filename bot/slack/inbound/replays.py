"""A signed slash command or interaction is accepted once: the same request sent again
(a replay of a captured one, within the five minutes its signature is valid) is refused.

Every request Bolt handles in HTTP mode passes :class:`AcceptedOnce` (a global middleware,
after Bolt has checked the signature) before any listener: unless it is an Events API
envelope (events have their own dedup: the queue refuses an event or a message it has seen,
bot/turn/store/queue.py), its (X-Slack-Request-Timestamp, X-Slack-Signature) is remembered in
Redis (bot/state/signed_requests.py) and a second arrival gets 401, as Bolt answers a request
whose signature it refuses. Slack never sends a slash command or an interaction again, so
the refusal is final and nothing in Slack retries it; the person who really clicked got the
first answer.

When Redis cannot be asked, the request is refused, not let through unchecked: the middleware
raises, and the app's error handler gives the answer it gives every request Redis being away
refused (bot/slack/inbound/storage_down.py: the person is told in plain words, nothing runs).

Socket Mode requests carry no signature: they come over a WebSocket the app-level token
opened, so a captured one cannot be sent again by anyone without that token. They pass
unchecked; Slack sends an envelope it saw no ack for again, with the same ``envelope_id``,
and that redelivery must still be answered (bot/slack/inbound/socket/).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.state.signed_requests import SignedRequests

log = logging.getLogger(__name__)

# The Events API's envelopes: deduplicated by their event (or harmless to answer twice).
EVENTS_API = frozenset({"event_callback", "url_verification", "app_rate_limited"})
REPLAYED = "request already accepted (a replay)"


def checked_once(body: Any) -> bool:
    """Whether a request is accepted only once (pure): everything but the Events API's
    envelopes (slash commands, block actions, view submissions and closings, shortcuts,
    options, anything Slack adds)."""
    return not (isinstance(body, dict) and body.get("type") in EVENTS_API)


def _header(request: AsyncBoltRequest, name: str) -> str:
    values = request.headers.get(name) or [""]
    return str(values[0] or "")


class AcceptedOnce(AsyncMiddleware):
    def __init__(self, signed: SignedRequests) -> None:
        self.signed = signed

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        if req.mode == "socket_mode" or not checked_once(req.body):
            return await next()
        timestamp = _header(req, "x-slack-request-timestamp")
        signature = _header(req, "x-slack-signature")
        # Unsigned: the HTTP layer and Bolt refused it already; refused here too, whatever
        # let it through.
        if not (timestamp and signature) or not await self.signed.first_time(timestamp, signature):
            log.warning(
                "refused a replayed Slack request (401): %s signed at %s",
                _kind(req.body),
                timestamp or "no time",
            )
            return BoltResponse(status=401, body=REPLAYED)
        return await next()


def _kind(body: Any) -> str:
    """What a request is, for the log (never its content)."""
    if not isinstance(body, dict):
        return "a request"
    if body.get("command"):
        return f"the slash command {str(body['command'])[:40]}"
    return f"a {str(body.get('type') or 'request')[:40]}"
