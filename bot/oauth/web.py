"""The sign-in's routes, as aiohttp serves them on a replica's public port: ``GET`` and
``POST /oauth/start``, ``GET /oauth/callback`` (what each does: ``flows.py``) and
``GET /oauth/client.json``, this client's metadata document (CIMD).

HTTP mode adds them to the events port's app (the front door hands them to aiohttp:
bot/slack/inbound/http.py); Socket Mode serves them on ``--port`` (bot/process/run.py);
worker processes serve none. Every page is answered ``Cache-Control: no-store`` and
``Referrer-Policy: no-referrer`` (the start link and the callback carry the state and the
code), may not be framed, and runs no script. Redis out of reach: a plain 503 page with the
same headers, counted (``slack_agent_oauth_callbacks_total{outcome="unavailable"}``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web

from bot.oauth import pages
from bot.oauth.config import CALLBACK_PATH
from bot.oauth.flows import (
    CLIENT_DOCUMENT_PATH,
    COOKIE,
    COOKIE_PATH,
    NONCE_FIELD,
    START_COOKIE,
    Answer,
    Posted,
    count,
)
from bot.oauth.pages import START_PATH
from bot.state.redis.errors import REDIS_DOWN

if TYPE_CHECKING:
    from bot.oauth.side import OAuthSide

PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'",
}
DOCUMENT_MAX_AGE_S = 3600
FORM_MAX_BYTES = 4096

log = logging.getLogger(__name__)


def answered(answer: Answer) -> web.Response:
    """The HTTP answer for a page, a redirect, and a cookie."""
    if answer.location is not None:
        response = web.Response(status=303, headers={**PAGE_HEADERS, "Location": answer.location})
    else:
        response = web.Response(
            status=answer.page.status,
            text=answer.page.html,
            content_type="text/html",
            charset="utf-8",
            headers=PAGE_HEADERS,
        )
    cookie = answer.cookie
    if cookie is not None:
        response.set_cookie(
            cookie.name,
            cookie.value,
            max_age=cookie.max_age,
            path=COOKIE_PATH,
            httponly=True,
            samesite=cookie.samesite,
            secure=cookie.secure,
        )
    return response


async def unless_redis_is_down(answer: Callable[[], Awaitable[Answer]]) -> web.Response:
    """The answer; a plain 503 page (the same headers) when Redis cannot be reached."""
    try:
        return answered(await answer())
    except REDIS_DOWN as error:
        log.warning("a sign-in page could not be answered: Redis %s", type(error).__name__)
        count("unavailable")
        return answered(Answer(pages.service_unavailable()))


def oauth_routes(side: OAuthSide) -> list[web.RouteDef]:
    sign_ins = side.sign_ins

    async def start_page(request: web.Request) -> web.Response:
        state = request.query.get("state", "")
        start_cookie = request.cookies.get(START_COOKIE)
        return await unless_redis_is_down(lambda: sign_ins.start_page(state, start_cookie))

    async def start(request: web.Request) -> web.Response:
        if (request.content_length or 0) > FORM_MAX_BYTES:
            raise web.HTTPRequestEntityTooLarge(
                max_size=FORM_MAX_BYTES, actual_size=request.content_length or 0
            )
        form = await request.post()
        state, nonce = form.get("state"), form.get(NONCE_FIELD)
        posted = Posted(
            state if isinstance(state, str) else "",
            nonce if isinstance(nonce, str) else "",
            start_cookie=request.cookies.get(START_COOKIE),
            cookie=request.cookies.get(COOKIE),
            fetch_site=request.headers.get("Sec-Fetch-Site"),
            origin=request.headers.get("Origin"),
        )
        return await unless_redis_is_down(lambda: sign_ins.start(posted))

    async def callback(request: web.Request) -> web.Response:
        query = {name: request.query.get(name, "") for name in request.query}
        cookie = request.cookies.get(COOKIE)
        return await unless_redis_is_down(lambda: sign_ins.callback(query, cookie))

    async def client_document(request: web.Request) -> web.Response:
        document = sign_ins.client_document()
        if document is None:
            raise web.HTTPNotFound()
        return web.json_response(
            document, headers={"Cache-Control": f"public, max-age={DOCUMENT_MAX_AGE_S}"}
        )

    return [
        web.get(START_PATH, start_page),
        web.post(START_PATH, start),
        web.get(CALLBACK_PATH, callback),
        web.get(CLIENT_DOCUMENT_PATH, client_document),
    ]
