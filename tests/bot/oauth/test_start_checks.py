"""``POST /oauth/start`` only from the start page shown in that browser, and the sign-in's
pages with Redis out of reach. Real Redis, the test authorization server and MCP server, and
browsers that post the way a browser does (or the way a forged form makes one post).

The attack refused: Mallory asks for her own sign-in link (she knows its state) and has a
page of hers make Bob's browser post it to ``/oauth/start``; Bob's browser would get the
cookie and a redirect to the authorization server, where Bob is signed in already, and come
back with a code for his account: his account would be connected to Mallory's Slack identity.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis
from prometheus_client import REGISTRY
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from bot.oauth.flows import START_COOKIE
from bot.state.audit import AuditKind
from tests.bot.oauth.signing_in import (
    ALICE,
    AS_SENT,
    Browser,
    Site,
    auth_server,
    browser,
    capture,
    files,
    site,
    start_form,
    state_of,
)
from tests.bot.oauth.test_tokens import free_port
from tests.fakes.oauth_server import AuthServer

__all__ = ["auth_server", "browser", "files", "site"]  # fixtures

pytestmark = pytest.mark.timeout(60)

CROSS_SITE = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}


def counted(outcome: str) -> float:
    value = REGISTRY.get_sample_value("slack_agent_oauth_callbacks_total", {"outcome": outcome})
    return value or 0.0


async def malloris_link(site: Site) -> str:
    """Mallory's (ALICE's) own start link: she knows its state."""
    pending = await capture(site.files_url, site.callback)
    return await site.side.sign_ins.begin(
        ALICE, "files", pending, request_id=None, external=False, ttl_s=600
    )


async def refusals(site: Site) -> list[tuple[str, str]]:
    """The refusals audited, oldest first: the reason word, and which check (``detail``)."""
    entries = await site.state.shared.audit.latest(50)
    return [
        (e.outcome, str(e.detail.get("check", "")))
        for e in reversed(entries)
        if e.kind is AuditKind.CONNECTION and e.action == "callback_refused"
    ]


async def started(site: Site, url: str) -> str:
    """The flow's ``started`` field: "" while nobody has spent the link."""
    fields = await site.state.client.hgetall(site.state.keys.oauth_flow(state_of(url)))
    return str(fields["started"])


@pytest.fixture
async def mallory() -> AsyncIterator[Browser]:
    opened = Browser()
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_cross_site_post_to_start_is_refused(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    """The review's probe: Bob's browser (``browser``) posts Mallory's state from her page."""
    url = await malloris_link(site)
    before = counted("cross_site")
    status, body, headers = await browser.post_form(url, {"state": state_of(url)}, CROSS_SITE)
    assert status == 403 and "Location" not in headers, body
    assert "not continued from its own page" in body
    assert headers["Cache-Control"] == "no-store"
    assert not browser.has_cookie()
    assert await refusals(site) == [("cross_site", "fetch_site")]
    assert counted("cross_site") == before + 1
    assert await started(site, url) == ""  # nothing spent: Mallory's link still opens
    assert auth_server.authority.grants["authorization_code"] == 0


async def test_a_post_without_the_start_pages_nonce_is_refused(
    site: Site, browser: Browser, mallory: Browser, auth_server: AuthServer
) -> None:
    """A browser that sends no Sec-Fetch-Site or Origin (older ones) is still refused: the
    form's nonce and the start cookie must both be there and equal. Mallory can read the
    nonce of a start page she opens herself, but not the cookie Bob's browser holds."""
    url = await malloris_link(site)
    # No nonce at all (the form her page posts has the state alone).
    status, _, _ = await browser.post_form(url, {"state": state_of(url)})
    assert status == 403
    # Her own start page's nonce, posted from Bob's browser (which never opened the page).
    status, page, _ = await mallory.get(url)
    assert status == 200
    form = start_form(page)
    status, _, _ = await browser.post_form(url, form)
    assert status == 403
    # Bob's browser has a start cookie of its own (it opened another start page): its
    # nonce is not the one in Mallory's form.
    other = await malloris_link(site)
    assert (await browser.get(other))[0] == 200 and browser.has_cookie(START_COOKIE)
    status, _, _ = await browser.post_form(url, form)
    assert status == 403
    assert await refusals(site) == [("cross_site", "nonce")] * 3
    assert await started(site, url) == ""
    # Mallory's own browser, from her own start page: it goes ahead.
    status, _, headers = await mallory.post_form(url, form, AS_SENT)
    assert status == 303 and headers["Location"].startswith(auth_server.url)


async def test_a_post_from_another_origin_is_refused(site: Site, browser: Browser) -> None:
    """The start page's nonce and cookie, but the POST came from another origin (a page of
    the same site, or a browser without Sec-Fetch-Site): refused."""
    url = await malloris_link(site)
    status, page, _ = await browser.get(url)
    assert status == 200
    form = start_form(page)
    posts = (
        ({"Sec-Fetch-Site": "same-site"}, "fetch_site"),
        ({"Origin": "https://evil.example"}, "origin"),
        ({"Origin": site.base.replace("127.0.0.1", "localhost")}, "origin"),
    )
    for headers, _ in posts:
        status, _, _ = await browser.post_form(url, form, headers)
        assert status == 403, headers
    assert await refusals(site) == [("cross_site", check) for _, check in posts]
    assert await started(site, url) == ""


@pytest.mark.parametrize(
    "headers",
    [
        {},  # a browser that sends neither header
        {"Sec-Fetch-Site": "same-origin", "Origin": "null"},  # the page is no-referrer
        {"Sec-Fetch-Site": "same-origin"},
        {"Origin": "ORIGIN"},  # the start link's own origin
        {"Sec-Fetch-Site": "none"},  # typed or bookmarked
    ],
)
async def test_the_start_pages_own_form_goes_ahead(
    site: Site, browser: Browser, headers: dict[str, str]
) -> None:
    url = await malloris_link(site)
    sent = {k: v.replace("ORIGIN", site.base) for k, v in headers.items()}
    status, body, _ = await browser.post_start(url, sent)
    assert status == 303, body
    assert await started(site, url) == "1"
    assert await refusals(site) == []


def a_redis_out_of_reach() -> redis.Redis:
    return redis.Redis(port=free_port(), decode_responses=True, retry=Retry(NoBackoff(), 0))


async def test_redis_out_of_reach_is_a_plain_503(site: Site, browser: Browser) -> None:
    """Redis away while a browser opens the link, continues or comes back: a plain 503 page
    with the pages' headers, counted ``unavailable``; nothing else is said."""
    url = await malloris_link(site)
    status, page, _ = await browser.get(url)
    assert status == 200
    form = start_form(page)
    sign_ins = site.side.sign_ins
    working, away = sign_ins.client, a_redis_out_of_reach()
    sign_ins.client = away
    try:
        before = counted("unavailable")
        answers = [
            await browser.get(url),
            await browser.post_form(url, form, AS_SENT),
            await browser.get(f"{site.callback}?code=c&state={state_of(url)}"),
        ]
        for status, body, headers in answers:
            assert status == 503 and "Try again in a moment" in body
            assert headers["Cache-Control"] == "no-store"
            assert headers["Referrer-Policy"] == "no-referrer"
            assert headers["X-Frame-Options"] == "DENY"
            assert state_of(url) not in body
        assert counted("unavailable") == before + 3
    finally:
        sign_ins.client = working
        await away.aclose()
    # Back: the link was not spent.
    assert (await browser.post_form(url, form, AS_SENT))[0] == 303
