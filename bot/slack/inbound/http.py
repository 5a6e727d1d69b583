"""HTTP mode: Slack's requests on POST /slack/events; /healthz and /readyz
(bot/health/endpoints.py) on the same port, and the sign-in's /oauth/* pages when a server
signs people in (``routes``: bot/oauth/web.py). This port is public (Slack reaches it), so
/metrics is not served here unless asked for (``metrics``: ``--metrics-port`` given as
the same port).

A request Slack did not sign gets 401 before its body is parsed; a message event takes the
short way past Bolt (:class:`ShortAnswers`, bot/slack/inbound/message_events.py); a signed
body Bolt cannot read gets 400 with one warning (no traceback); everything else goes to
Bolt. The events port puts a front door before this app (bot/slack/inbound/front_door.py,
bot/process/listen.py) that gives the short answers without aiohttp's request handling and
hands every other request to it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier

from bot.health.endpoints import add_routes
from bot.health.readiness import Readiness, redis_check
from bot.slack.inbound.message_events import MessageEvents
from bot.slack.inbound.request_head import media_type
from bot.slack.inbound.requests import MalformedRequest, bolt_request, signed_by_slack

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
JSON = "application/json"


class ShortAnswers:
    """The answers both doors of the events port give without Bolt: 401 to a request Slack
    did not sign, and the answer to a message event (``messages``). None: Bolt's to answer.

    The front door (bot/slack/inbound/front_door.py) passes headers with lower-case names,
    aiohttp its case-insensitive ones."""

    def __init__(self, signing_secret: str, messages: MessageEvents | None = None) -> None:
        self.verifier = SignatureVerifier(signing_secret)
        self.messages = messages

    async def __call__(self, raw: bytes, headers: Mapping[str, str]) -> BoltResponse | None:
        if not signed_by_slack(self.verifier, raw, headers):
            log.info("refused a request without a valid Slack signature (401)")
            return BoltResponse(status=401, body="invalid or missing Slack signature")
        if self.messages is None or media_type(headers.get("content-type", "")) != JSON:
            return None
        try:
            body = json.loads(raw)
        except ValueError:  # not JSON, or not UTF-8: Bolt's parsing says so
            return None
        return await self.messages.answer(body)


def http_app(
    bolt_app: AsyncApp,
    ping_redis: Callable[[], Awaitable[Any]],
    short: ShortAnswers,
    readiness: Readiness | None = None,
    *,
    metrics: bool = False,
    registry: CollectorRegistry = REGISTRY,
    workers: Callable[[], dict[str, int] | None] | None = None,
    routes: Sequence[web.RouteDef] = (),
) -> web.Application:
    """``routes``: more on the same port (the sign-in's pages)."""

    async def events(request: web.Request) -> web.Response:
        raw = await request.read()
        answer = await short(raw, request.headers)
        if answer is not None:
            return await to_aiohttp_response(answer)
        try:
            parsed = bolt_request(raw, request.headers, request.query_string)
        except MalformedRequest as exc:
            log.warning(
                "refused a signed request whose body cannot be read (400): %s; "
                "Content-Type %s, %d bytes",
                exc,
                request.content_type,
                len(raw),
            )
            return web.Response(status=400, text="malformed request body")
        return await to_aiohttp_response(await bolt_app.async_dispatch(parsed))

    app = web.Application()
    app.router.add_post(EVENTS_PATH, events)
    if readiness is None:
        readiness = Readiness({"redis": redis_check(ping_redis)})
    add_routes(app, readiness, ping_redis, metrics=metrics, registry=registry, workers=workers)
    app.add_routes(routes)
    return app
