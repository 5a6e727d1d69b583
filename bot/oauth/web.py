"""The sign-in's routes, as aiohttp serves them on a replica's public port: ``GET`` and
``POST /oauth/start``, ``GET /oauth/callback`` (what each does: ``flows.py``) and
``GET /oauth/client.json``, this client's metadata document (CIMD).

HTTP mode adds them to the events port's app (the front door hands them to aiohttp:
bot/slack/inbound/http.py); Socket Mode serves them on ``--port`` (bot/process/run.py);
worker processes serve none. Every page is answered ``Cache-Control: no-store`` and
``Referrer-Policy: no-referrer`` (the start link and the callback carry the state and the
code), may not be framed, and runs no script.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from bot.oauth.config import CALLBACK_PATH
from bot.oauth.flows import CLIENT_DOCUMENT_PATH, COOKIE, COOKIE_PATH, Answer
from bot.oauth.pages import START_PATH

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
            COOKIE,
            cookie.value,
            max_age=cookie.max_age,
            path=COOKIE_PATH,
            httponly=True,
            samesite="Lax",
            secure=cookie.secure,
        )
    return response


def oauth_routes(side: OAuthSide) -> list[web.RouteDef]:
    sign_ins = side.sign_ins

    async def start_page(request: web.Request) -> web.Response:
        return answered(await sign_ins.start_page(request.query.get("state", "")))

    async def start(request: web.Request) -> web.Response:
        if (request.content_length or 0) > FORM_MAX_BYTES:
            raise web.HTTPRequestEntityTooLarge(
                max_size=FORM_MAX_BYTES, actual_size=request.content_length or 0
            )
        form = await request.post()
        state = form.get("state")
        return answered(
            await sign_ins.start(
                state if isinstance(state, str) else "", request.cookies.get(COOKIE)
            )
        )

    async def callback(request: web.Request) -> web.Response:
        query = {name: request.query.get(name, "") for name in request.query}
        return answered(await sign_ins.callback(query, request.cookies.get(COOKIE)))

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
