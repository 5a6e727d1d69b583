"""HTTP mode: Slack's requests on POST /slack/events; /healthz and /readyz
(bot/health/endpoints.py) on the same port. This port is public (Slack reaches it), so
/metrics is not served here unless asked for (``metrics``: ``--metrics-port`` given as
the same port).

A request Slack did not sign gets 401 before its body is parsed; a signed body Bolt cannot
read gets 400 with one warning (no traceback); a message event takes the short way past Bolt
(``messages``: bot/slack/inbound/message_events.py); everything else goes to Bolt.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from bot.health.endpoints import add_routes
from bot.health.readiness import Readiness, redis_check
from bot.slack.inbound.message_events import MessageEvents
from bot.slack.inbound.requests import MalformedRequest, bolt_request, signed_by_slack

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


def http_app(
    bolt_app: AsyncApp,
    ping_redis: Callable[[], Awaitable[Any]],
    signing_secret: str,
    readiness: Readiness | None = None,
    *,
    metrics: bool = False,
    registry: CollectorRegistry = REGISTRY,
    workers: Callable[[], dict[str, int] | None] | None = None,
    messages: MessageEvents | None = None,
) -> web.Application:
    verifier = SignatureVerifier(signing_secret)

    async def events(request: web.Request) -> web.Response:
        raw = await request.read()
        if not signed_by_slack(verifier, raw, request.headers):
            log.info("refused a request without a valid Slack signature (401)")
            return web.Response(status=401, text="invalid or missing Slack signature")
        if messages is not None and request.content_type == "application/json":
            try:
                body = json.loads(raw)
            except ValueError:  # not JSON, or not UTF-8: Bolt's parsing says so below
                body = None
            answer = await messages.answer(body)
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
    return app
