"""HTTP mode: Slack's requests on POST /slack/events, liveness on GET /healthz."""

from __future__ import annotations

import logging

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp

from bot.state.store import State

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


def http_app(bolt_app: AsyncApp, state: State) -> web.Application:
    async def events(request: web.Request) -> web.Response:
        bolt_response = await bolt_app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(bolt_response)

    async def healthz(request: web.Request) -> web.Response:
        # Liveness: the process answers. Redis is reported, not required: a Redis outage
        # should not make an orchestrator restart every replica.
        try:
            await state.client.ping()
            redis = "ok"
        except Exception as exc:
            redis = f"unreachable ({type(exc).__name__})"
        return web.json_response({"ok": True, "redis": redis})

    app = web.Application()
    app.router.add_post(EVENTS_PATH, events)
    app.router.add_get("/healthz", healthz)
    return app
