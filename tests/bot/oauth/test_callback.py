"""The sign-in's start page and callback on the real Redis, against the test authorization
server and MCP server, with browsers that follow the link: the link is spent once and only
by a POST; only the browser that spent it can finish; the code is exchanged once; what
expired, was forged or failed is refused, audited and stores nothing; a refusal at the
authorization server denies the waiting request; a success stores the token sealed, decides
the waiting request approved (its turn woken) and deletes the flow."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sized
from typing import NoReturn

import pytest
from prometheus_client import REGISTRY

from bot.oauth import flows
from bot.oauth.flows import COOKIE, START_COOKIE, Outsider
from bot.process.slack import start_page_names
from bot.process.state import State
from bot.slack.client import web_client
from bot.slack.identity import BotIdentity
from bot.slack.inbox.names import SlackNames
from bot.state.audit import AuditEntry, AuditKind
from bot.turn.model import QueuedTurn, Turn
from bot.turn.store.approvals import SIGN_IN, ApprovalRequest, ApprovalState, sign_in_field
from tests.bot.oauth.signing_in import (
    ALICE,
    Browser,
    Site,
    auth_server,
    browser,
    capture,
    files,
    other_browser,
    signing_in_config,
    site,
    start_form,
)
from tests.bot.turn.store.test_approvals import a_turn
from tests.fakes.oauth_server import AuthServer
from tests.fakes.slack_server import FakeSlack
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.grants import GrantUnavailable
from tools.mcp.oauth.pending import PendingAuthorization

__all__ = ["auth_server", "browser", "files", "other_browser", "site"]  # fixtures

pytestmark = pytest.mark.timeout(60)


async def waiting_request(site: Site) -> tuple[QueuedTurn, ApprovalRequest]:
    """A parked turn's call waiting for alice to connect files (as the gate opens it)."""
    queued = await a_turn(site.state)
    request, _ = await site.state.threads.approvals.open(
        queued,
        "c1",
        "files_whoami",
        "",
        600,
        kind=SIGN_IN,
        server="files",
        field=sign_in_field("c1", 1),
    )
    return queued, request


async def begun(
    site: Site, request_id: str | None = None, ttl_s: float = 600, **options: str
) -> tuple[PendingAuthorization, str]:
    pending = await capture(site.files_url, site.callback)
    url = await site.side.sign_ins.begin(
        ALICE, "files", pending, request_id=request_id, external=False, ttl_s=ttl_s, **options
    )
    return pending, url


async def connection_audit(site: Site, action: str) -> list[AuditEntry]:
    entries = await site.state.shared.audit.latest(50)
    return [e for e in entries if e.kind is AuditKind.CONNECTION and e.action == action]


def callbacks(outcome: str) -> float:
    value = REGISTRY.get_sample_value("slack_agent_oauth_callbacks_total", {"outcome": outcome})
    return value or 0.0


async def flow_exists(site: Site, pending: PendingAuthorization) -> bool:
    """The flow's sealed record is kept (the pending request: its verifier, its client)."""
    key = site.state.keys.oauth_flow(pending.state)
    return await site.state.client.hget(key, "ct") is not None


@pytest.mark.cluster
async def test_success_stores_the_token_sealed_wakes_the_turn_and_deletes_the_flow(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    queued, request = await waiting_request(site)
    pending, url = await begun(site, request.id)
    assert url == f"{site.base}/oauth/start?state={pending.state}"
    waiting = site.state.keys.oauth_waiting("T1", "U1", "files")
    assert await site.state.client.smembers(waiting) == {request.id}
    before = callbacks("connected")

    back = await browser.to_callback(url)
    assert back.startswith(site.callback)
    status, body, headers = await browser.get(back)

    assert status == 200 and "Connected to <strong>files</strong>" in body
    assert headers["Cache-Control"] == "no-store"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert auth_server.authority.grants["authorization_code"] == 1
    # The token is kept sealed: nothing the authorization server issued is readable.
    [connection] = await site.side.connections.connections(ALICE)
    assert (connection.server, connection.issuer) == ("files", auth_server.url)
    keys = [k async for k in site.state.client.scan_iter(match=f"{site.state.keys.prefix}*")]
    stored = " ".join([str(await dump(site, key)) for key in keys])
    assert auth_server.authority.secrets_seen
    assert not [s for s in auth_server.authority.secrets_seen if s in stored]
    held = await site.side.tokens_for(ALICE, "files").current()
    assert held is not None and held.snapshot.token.access_token in auth_server.authority.access
    # The waiting request is decided by alice, its turn woken, the flow and the set gone.
    decided = await site.state.threads.approvals.get(request.id)
    assert decided is not None and decided.state is ApprovalState.APPROVED and decided.by == "U1"
    claimed = await site.state.threads.queue.claim_stale("w2", 60_000)
    assert [c.entry_id for c in claimed] == [queued.entry_id]
    assert not await flow_exists(site, pending)
    assert not await site.state.client.exists(waiting)
    [entry] = await connection_audit(site, "connected")
    assert (entry.actor, entry.target, entry.outcome) == ("U1", "files", "ok")
    assert callbacks("connected") == before + 1


async def dump(site: Site, key: str) -> object:
    client = site.state.client
    kind = await client.type(key)
    if kind == "hash":
        return await client.hgetall(key)
    if kind == "set":
        return await client.smembers(key)
    if kind == "stream":
        return await client.xrange(key)
    if kind == "zset":
        return await client.zrange(key, 0, -1)
    return await client.get(key)


async def test_an_unknown_state_is_refused_and_audited(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    before = callbacks("unknown_state")
    status, body, headers = await browser.get(
        f"{site.callback}?code=made-up&state=never-issued&iss={auth_server.url}"
    )
    assert status == 400 and "unknown or expired" in body
    assert headers["Cache-Control"] == "no-store"
    [entry] = await connection_audit(site, "callback_refused")
    assert entry.outcome == "unknown_state"
    assert "never-issued" not in str(entry.detail) and "made-up" not in str(entry.detail)
    assert callbacks("unknown_state") == before + 1
    assert auth_server.authority.grants["authorization_code"] == 0


async def test_only_the_browser_that_opened_the_link_can_finish(
    site: Site, browser: Browser, other_browser: Browser, auth_server: AuthServer
) -> None:
    _, request = await waiting_request(site)
    _, url = await begun(site, request.id)
    back = await browser.to_callback(url)
    assert browser.has_cookie()

    # Someone else's state brought back by a browser without the cookie: refused.
    status, body, _ = await other_browser.get(back)
    assert status == 403 and "another browser" in body
    # A browser with a cookie of its own (it opened another link): refused too.
    other_pending, other_url = await begun(site)
    assert (await other_browser.get(other_url))[0] == 200
    assert (await other_browser.post_start(other_url))[0] == 303 and other_browser.has_cookie()
    status, _, _ = await other_browser.get(back)
    assert status == 403
    refused = await connection_audit(site, "callback_refused")
    assert [e.outcome for e in refused] == ["other_browser", "other_browser"]
    assert {e.actor for e in refused} == {"U1"}
    assert auth_server.authority.grants["authorization_code"] == 0
    still = await site.state.threads.approvals.get(request.id)
    assert still is not None and still.open

    # The browser that opened it finishes it.
    status, body, _ = await browser.get(back)
    assert status == 200 and auth_server.authority.grants["authorization_code"] == 1
    assert await flow_exists(site, other_pending)


async def test_opening_the_link_twice_spends_nothing_and_continuing_twice_is_refused(
    site: Site, browser: Browser, other_browser: Browser
) -> None:
    pending, url = await begun(site)
    nonces = []
    for _ in range(2):
        status, body, headers = await browser.get(url)
        assert status == 200
        assert "Connect <strong>files</strong> for <strong>Slack user U1</strong>" in body
        assert "in <strong>workspace T1</strong>" in body
        assert f'name=state value="{pending.state}"' in body
        assert headers["Cache-Control"] == "no-store"
        assert headers["Referrer-Policy"] == "no-referrer"
        start_cookie = headers["Set-Cookie"]
        assert start_cookie.startswith(f"{START_COOKIE}=")
        assert "HttpOnly" in start_cookie and "SameSite=Strict" in start_cookie
        assert "Path=/oauth" in start_cookie and "Secure" not in start_cookie
        assert 0 < int(start_cookie.split("Max-Age=")[1].split(";")[0]) <= 600
        nonces.append(start_form(body)["nonce"])
    assert nonces[0] == nonces[1]  # the browser keeps its start nonce (two tabs both work)
    assert not browser.has_cookie()
    fields = await site.state.client.hgetall(site.state.keys.oauth_flow(pending.state))
    assert (fields["started"], fields["browser"]) == ("", "")

    status, _, headers = await browser.post_start(url)
    assert status == 303 and headers["Location"] == pending.authorization_url
    cookie = headers["Set-Cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/oauth" in cookie
    assert "Secure" not in cookie  # an http:// base (localhost)
    max_age = int(cookie.split("Max-Age=")[1].split(";")[0])
    assert 600 < max_age <= 720  # the flow's life: its deadline and 120 s more
    for someone in (other_browser, browser):
        status, body, _ = await someone.post_start(url)
        assert status == 409 and "already opened" in body
    assert [e.outcome for e in await connection_audit(site, "callback_refused")] == [
        "started_before",
        "started_before",
    ]


async def test_an_https_start_link_sets_a_secure_cookie(site: Site) -> None:
    pending, url = await begun(site, base_url="https://bot.example.com")
    assert url == f"https://bot.example.com/oauth/start?state={pending.state}"
    local = url.replace("https://bot.example.com", site.base)
    browser = Browser(secure=site.base)  # what the browser sees as https://bot.example.com
    try:
        status, _, headers = await browser.get(local)
        assert status == 200 and "Secure" in headers["Set-Cookie"]  # the start nonce's
        origin = {"Origin": "https://bot.example.com", "Sec-Fetch-Site": "same-origin"}
        status, _, headers = await browser.post_start(local, origin)
        assert status == 303 and "Secure" in headers["Set-Cookie"]
    finally:
        await browser.close()


async def test_a_reload_of_the_callback_is_refused_and_the_code_exchanged_once(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    pending, url = await begun(site)
    back = await browser.to_callback(url)
    assert (await browser.get(back))[0] == 200
    before = callbacks("reload")
    status, body, _ = await browser.get(back)
    assert status == 409 and "already finished" in body
    assert auth_server.authority.report()["grants"] == {"authorization_code": 1}
    assert callbacks("reload") == before + 1
    [entry] = await connection_audit(site, "callback_refused")
    assert (entry.actor, entry.target, entry.outcome) == ("U1", "files", "reload")
    # Nor can the spent link be opened again.
    assert (await browser.get(url))[0] == 410
    assert not await flow_exists(site, pending)


async def test_a_reload_while_the_first_is_being_finished_is_refused(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    _, url = await begun(site)
    back = await browser.to_callback(url)
    before = callbacks("reload")
    first, second = await asyncio.gather(browser.get(back), browser.get(back))
    statuses = sorted([first[0], second[0]])
    assert statuses == [200, 409]
    assert auth_server.authority.grants["authorization_code"] == 1
    assert callbacks("reload") == before + 1
    assert [e.outcome for e in await connection_audit(site, "callback_refused")] == ["reload"]


async def test_an_expired_link_is_gone(site: Site, browser: Browser) -> None:
    pending, url = await begun(site, ttl_s=0)  # its deadline is now
    assert await flow_exists(site, pending)  # kept 120 s more for a late callback
    status, body, _ = await browser.get(url)
    assert status == 410 and "expired or was used" in body
    status, _, _ = await browser.post_form(url, {"state": pending.state})
    assert status == 410 and not browser.has_cookie()
    assert [e.outcome for e in await connection_audit(site, "callback_refused")] == [
        "expired",
        "expired",
    ]


async def test_a_wrong_iss_fails_and_stores_nothing(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    """The request waiting on it is decided at once (denied, ``failed``): its turn wakes and
    tells the model, instead of waiting for the request's deadline."""
    queued, request = await waiting_request(site)
    pending, url = await begun(site, request.id)
    auth_server.switches.iss = "wrong"
    before = callbacks("refused")
    back = await browser.to_callback(url)
    status, body, headers = await browser.get(back)
    assert status == 400 and "failed" in body and "Nothing was kept" in body
    assert "<code>/agent connect files</code>" in body and "Ask the bot again" not in body
    assert headers["Cache-Control"] == "no-store"
    assert auth_server.authority.grants["authorization_code"] == 0
    assert await site.side.connections.connections(ALICE) == []
    assert await site.side.tokens_for(ALICE, "files").current() is None
    [entry] = await connection_audit(site, "callback_refused")
    assert entry.outcome == "issuer"
    assert callbacks("refused") == before + 1
    decided = await site.state.threads.approvals.get(request.id)
    assert decided is not None and decided.state is ApprovalState.DENIED
    assert decided.reason == "failed" and decided.by == "U1"
    claimed = await site.state.threads.queue.claim_stale("w2", 60_000)
    assert [c.entry_id for c in claimed] == [queued.entry_id]
    assert await site.side.sign_ins.wait_finished(pending.state, 0) == "failed"
    assert not await flow_exists(site, pending)


async def test_access_denied_denies_the_waiting_request(
    site: Site, browser: Browser, auth_server: AuthServer
) -> None:
    queued, request = await waiting_request(site)
    pending, url = await begun(site, request.id)
    back = await browser.to_callback(url, deny=True)
    assert "error=access_denied" in back
    status, body, _ = await browser.get(back)
    assert status == 200 and "did not allow access" in body
    decided = await site.state.threads.approvals.get(request.id)
    assert decided is not None and decided.state is ApprovalState.DENIED
    assert decided.reason == "declined"
    claimed = await site.state.threads.queue.claim_stale("w2", 60_000)
    assert [c.entry_id for c in claimed] == [queued.entry_id]
    assert await site.side.sign_ins.wait_finished(pending.state, 0) == "declined"
    [entry] = await connection_audit(site, "signin_declined")
    assert (entry.actor, entry.target, entry.outcome) == ("U1", "files", "access_denied")
    assert await site.side.connections.connections(ALICE) == []
    assert not await flow_exists(site, pending)
    assert auth_server.authority.grants["authorization_code"] == 0


async def test_a_connect_wakes_every_request_waiting_for_it(site: Site, browser: Browser) -> None:
    """Two turns wait on alice's connection; /agent connect's link (no request of its own)
    finishes it, and both are decided."""
    _, first = await waiting_request(site)
    await begun(site, first.id)  # its ephemeral was lost
    queued = await a_turn(site.state, Turn("T1", "C1", "721.1", "U1", "x", message_ts="721.1"))
    second, _ = await site.state.threads.approvals.open(
        queued, "c9", "files_whoami", "", 600, kind=SIGN_IN, server="files", field="signin:c9:1"
    )
    await begun(site, second.id)
    _, url = await begun(site)  # /agent connect
    status, _, _ = await browser.get(await browser.to_callback(url))
    assert status == 200
    for request in (first, second):
        decided = await site.state.threads.approvals.get(request.id)
        assert decided is not None and decided.state is ApprovalState.APPROVED


async def test_wait_finished_sees_the_sign_in_end_on_any_replica(
    site: Site, browser: Browser, make_state: Callable[..., State]
) -> None:
    """The console's wait reads how the flow ended from Redis: another process's SignIns
    (which began nothing) sees it too; a flow nobody finished has no end."""
    other = make_state(**signing_in_config(site.base, site.files_url))
    assert other.oauth is not None
    pending, url = await begun(site)
    waiting = asyncio.create_task(other.oauth.sign_ins.wait_finished(pending.state, 30))
    status, _, _ = await browser.get(await browser.to_callback(url))
    assert status == 200
    assert await waiting == "connected"
    # Connected already: a new sign-in has not ended until its own callback.
    again, _ = await begun(site)
    assert await site.side.sign_ins.wait_finished(again.state, 0.3) is None


async def test_a_sign_in_keeps_nothing_in_the_process(site: Site) -> None:
    """A Slack process begins sign-ins all day: SignIns holds no record of them in memory
    (what the console waits on is in Redis)."""
    sign_ins = site.side.sign_ins

    def held() -> dict[str, int]:
        return {k: len(v) for k, v in vars(sign_ins).items() if isinstance(v, Sized)}

    before = held()
    pending = await capture(site.files_url, site.callback)
    for n in range(20):
        account = Account("T1", f"U{n}")
        await sign_ins.begin(account, "files", pending, request_id=None, external=False, ttl_s=60)
    assert held() == before


async def test_begin_refuses_a_person_of_another_workspace(site: Site) -> None:
    pending = await capture(site.files_url, site.callback)
    with pytest.raises(Outsider):
        await site.side.sign_ins.begin(
            ALICE, "files", pending, request_id=None, external=True, ttl_s=600
        )
    assert not await flow_exists(site, pending)


async def test_the_client_metadata_document(site: Site, browser: Browser) -> None:
    status, body, headers = await browser.get(site.base + "/oauth/client.json")
    assert status == 200 and "max-age=3600" in headers["Cache-Control"]
    document = json.loads(body)
    assert document["client_id"] == site.base + "/oauth/client.json"
    assert document["redirect_uris"] == [site.callback, "http://127.0.0.1:8976/oauth/callback"]
    assert document["token_endpoint_auth_method"] == "none"
    assert document["response_types"] == ["code"]
    assert document["grant_types"] == ["authorization_code", "refresh_token"]


async def test_the_start_page_names_the_person_and_workspace_as_slack_does(
    site: Site, browser: Browser, fake_slack: FakeSlack
) -> None:
    fake_slack.users["U1"] = {"id": "U1", "profile": {"display_name": "Alice <b>"}}
    client = web_client("xoxb-test", fake_slack.api_url)
    try:
        site.side.sign_ins.describe = start_page_names(
            SlackNames(client, site.state.shared.cache), BotIdentity(client)
        )
        mine = Account("T0TEAM", "U1")
        pending = await capture(site.files_url, site.callback)
        url = await site.side.sign_ins.begin(
            mine, "files", pending, request_id=None, external=False, ttl_s=600
        )
        status, body, _ = await browser.get(url)
    finally:
        await client.aclose()
    assert status == 200
    assert "for <strong>Alice &lt;b&gt;</strong> in <strong>Test</strong>" in body


async def test_an_authorization_server_out_of_reach_decides_the_waiting_request_at_once(
    site: Site, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued, request = await waiting_request(site)
    pending, url = await begun(site, request.id)
    back = await browser.to_callback(url)

    async def away(*args: object) -> NoReturn:
        raise GrantUnavailable("unreachable")

    monkeypatch.setattr(flows, "complete_authorization", away)
    before = callbacks("unavailable")
    status, body, headers = await browser.get(back)
    assert status == 502 and "could not be reached" in body and "Nothing was kept" in body
    assert "<code>/agent connect files</code>" in body
    assert headers["Referrer-Policy"] == "no-referrer"
    assert callbacks("unavailable") == before + 1
    decided = await site.state.threads.approvals.get(request.id)
    assert decided is not None and decided.state is ApprovalState.DENIED
    assert decided.reason == "unavailable"
    claimed = await site.state.threads.queue.claim_stale("w2", 60_000)
    assert [c.entry_id for c in claimed] == [queued.entry_id]
    [entry] = await connection_audit(site, "callback_refused")
    assert (entry.actor, entry.outcome) == ("U1", "unreachable")
    assert await site.side.sign_ins.wait_finished(pending.state, 0) == "unavailable"
    assert await site.side.connections.connections(ALICE) == []
