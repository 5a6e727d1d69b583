"""A Slack turn whose call needs its person's sign-in to an MCP server parks until they
connect, and only they get the link. End to end: the real app over signed HTTP, the fake
Slack and LLM, the real Redis, the test authorization server and its MCP server ``files``
(tests/fakes/oauth_server.py, tests/fakes/personal_mcp.py), and a browser that follows the
link through the sign-in's real pages and callback (bot/oauth/web.py), served on their own
loopback port as ``oauth.redirect_base_url``."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web

from bot.oauth.web import oauth_routes
from bot.turn.store.approvals import ApprovalRequest, ApprovalState
from tests.bot.oauth.signing_in import AS_SENT, start_form
from tests.fakes import trading_tools
from tests.fakes.llm_server import Request, calls, text, tool_results
from tests.fakes.oauth_server import AuthServer, bound_socket
from tests.fakes.personal_mcp import PersonalMcp
from tests.fakes.slack_harness import (
    SlackHarness,
    channel_message,
    direct_message,
    is_approval_card,
    is_waiting_note,
    mention,
)
from tests.fakes.slack_server import Message
from tests.waiting import until, until_true
from tools.mcp.oauth.account import Account

KEY = base64.b64encode(bytes(range(32))).decode()
START = "/oauth/start?state="
PREFIX = "files_"
ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["*"]},
}


@pytest.fixture
def auth_server() -> Iterator[AuthServer]:
    with AuthServer() as server:
        yield server


@pytest.fixture
def files(auth_server: AuthServer) -> Iterator[PersonalMcp]:
    with PersonalMcp(auth_server.url) as server:
        yield server


class SignInApp:
    """The app, and the sign-in's pages on a loopback port of their own."""

    def __init__(self, harness: SlackHarness, files: PersonalMcp) -> None:
        self.harness = harness
        self.files = files
        self.sock = bound_socket()
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.runner: web.AppRunner | None = None

    async def start(self, **config: Any) -> SlackHarness:
        harness = self.harness
        harness.slack.users = {u: {"id": u} for u in ("U0ALICE", "U0BOB", "U0ADMIN")}
        oauth = {"redirect_base_url": self.base, **config.pop("oauth", {})}
        await harness.start(
            roles=ROLES,
            mcp={"servers": {"files": {"url": self.files.url, "auth": "oauth", "prefix": PREFIX}}},
            oauth=oauth,
            slack={"streaming": False},
            environment={"SLACK_AGENT_SECRET_KEY": KEY},
            **config,
        )
        side = harness.state.oauth
        assert side is not None
        app = web.Application()
        app.add_routes(oauth_routes(side))
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.SockSite(self.runner, self.sock).start()
        return harness

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
        self.sock.close()


@pytest.fixture
async def signing_in(slack_app: SlackHarness, files: PersonalMcp) -> AsyncIterator[SignInApp]:
    trading_tools.RUNS.clear()
    app = SignInApp(slack_app, files)
    try:
        yield app
    finally:
        await app.stop()


async def connect(start_url: str, user: str = "alice", status: int = 200) -> str:
    """A browser follows the start link: the start page, Continue (its form), the
    authorization server's sign-in as ``user``, then back to the callback. The callback
    page's text (answered ``status``)."""
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.get(start_url, allow_redirects=False) as page:
            assert page.status == 200, await page.text()
            form = start_form(await page.text())
        parts = urlsplit(start_url)
        action = f"{parts.scheme}://{parts.netloc}{parts.path}"
        async with browser.post(
            action, data=form, headers=AS_SENT, allow_redirects=False
        ) as started:
            assert started.status == 303, await started.text()
            authorize = started.headers["Location"]
        async with browser.get(authorize, allow_redirects=False) as asked:
            assert asked.status == 302, await asked.text()
            login = asked.headers["Location"]
        async with browser.get(f"{login}&user={user}", allow_redirects=False) as signed:
            assert signed.status == 302, await signed.text()
            callback = signed.headers["Location"]
        async with browser.get(callback, allow_redirects=False) as back:
            assert back.status == status, await back.text()
            return await back.text()


def notes(app: SlackHarness, thread: str) -> list[Message]:
    return [m for m in app.slack.thread("C0CHAN", thread) if is_waiting_note(m)]


def kind_of(message: Message) -> str:
    return str(((message.metadata or {}).get("event_payload") or {}).get("kind") or "")


def sign_in_cards(app: SlackHarness, channel: str, thread: str) -> list[Message]:
    return [m for m in app.slack.thread(channel, thread) if kind_of(m) == "signin"]


def urls(blocks: list[dict[str, Any]]) -> list[str]:
    """Every button's url in ``blocks``."""
    return [
        str(element["url"])
        for block in blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
        if element.get("url")
    ]


def values(blocks: list[dict[str, Any]]) -> dict[str, str]:
    """Every button's action id -> its value."""
    return {
        str(element["action_id"]): str(element.get("value") or "")
        for block in blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
    }


def ephemerals(app: SlackHarness) -> list[dict[str, Any]]:
    return [c.args for c in app.slack.calls_to("chat.postEphemeral")]


def link_in(ephemeral: dict[str, Any]) -> str:
    """The link button's url in an ephemeral message."""
    blocks = ephemeral["blocks"]
    [link] = urls(json.loads(blocks) if isinstance(blocks, str) else blocks)
    return link


def everything_posted(app: SlackHarness) -> str:
    """Every message and edit the bot sent where anyone in the conversation reads it."""
    public = ("chat.postMessage", "chat.update", "chat.startStream", "chat.stopStream")
    return json.dumps([c.args for m in public for c in app.slack.calls_to(m)])


async def a_sign_in_card(app: SlackHarness, channel: str, thread: str) -> Message:
    await until(lambda: bool(sign_in_cards(app, channel, thread)))
    return sign_in_cards(app, channel, thread)[-1]


async def requests_of(app: SlackHarness, card: Message) -> list[ApprovalRequest]:
    request_id = values(card.blocks)["oauth_not_now"]
    request = await app.state.threads.approvals.get(request_id)
    assert request is not None
    return [r for r in await app.state.threads.approvals.of_turn(request.entry) if r.sign_in]


async def audited(app: SlackHarness, kind: str = "connection") -> list[tuple[str, str]]:
    entries = await app.state.shared.audit.latest(50)
    return [(e.action, e.outcome) for e in entries if e.kind == kind]


def answer_text(request: Request, call_id: str) -> dict[str, Any]:
    return dict(json.loads(tool_results(request)[call_id]))


async def test_turn_parks_and_only_the_person_gets_the_link(signing_in: SignInApp) -> None:
    app = await signing_in.start()
    app.llm.add(
        calls(("files_connect", {}, "c1")),
        calls(("files_whoami", {}, "w1")),
        lambda request: text(f"You are {tool_results(request)['w1']}."),
    )
    await app.post(app.envelope(mention("who am I on files?", "800.000001")))
    card = await a_sign_in_card(app, "C0CHAN", "800.000001")
    await until(lambda: bool(ephemerals(app)))
    assert urls(card.blocks) == []  # the card everyone reads has no link
    assert "oauth_not_now" in values(card.blocks)
    assert "connect files" in json.dumps(card.blocks)  # `/agent connect files`
    [sent] = ephemerals(app)
    assert sent["user"] == "U0ALICE" and sent["channel"] == "C0CHAN"
    assert sent["thread_ts"] == "800.000001"
    link = link_in(sent)
    assert link.startswith(signing_in.base + START)
    assert START not in everything_posted(app)  # nowhere but the ephemeral
    [request] = await requests_of(app, card)
    assert request.open and request.shown and request.link and link not in request.link
    # A later message in the thread waits behind it, and the thread is told why.
    app.llm.add(text("And later."))
    later = channel_message("and then?", "800.000002", thread_ts="800.000001")
    await app.post(app.envelope(later))
    await until(lambda: bool(notes(app, "800.000001")))
    [note] = notes(app, "800.000001")
    assert "waits for <@U0ALICE> to connect *files*" in note.text
    assert START not in everything_posted(app)

    page = await connect(link)
    assert "files" in page
    first, then = await app.answered("C0CHAN", "800.000001", count=2, within=20)
    assert (first.shown, then.shown) == ("You are alice.", "And later.")
    answer = first
    card = sign_in_cards(app, "C0CHAN", "800.000001")[-1]
    assert "connected" in json.dumps(card.blocks) and not values(card.blocks)
    assert float(answer.ts) > float(card.ts)
    assert ("signin_requested", "pending") in await audited(app)
    assert len(ephemerals(app)) == 1


async def test_in_a_dm_the_card_carries_the_link(signing_in: SignInApp) -> None:
    app = await signing_in.start()
    app.llm.add(
        calls(("files_connect", {}, "c1")),
        calls(("files_whoami", {}, "w1")),
        lambda request: text(f"You are {tool_results(request)['w1']}."),
    )
    await app.post(app.envelope(direct_message("who am I?", "801.000001")))
    card = await a_sign_in_card(app, "D0ALICE", "801.000001")
    [link] = urls(card.blocks)
    assert link.startswith(signing_in.base + START)
    assert ephemerals(app) == []
    await connect(link)
    [answer] = await app.answered("D0ALICE", "801.000001", within=20)
    assert answer.shown == "You are alice."


async def test_expiry_tells_the_model(signing_in: SignInApp) -> None:
    app = await signing_in.start(approval={"timeout_s": 2})
    app.llm.add(
        calls(("files_connect", {}, "c1")),
        lambda request: text(json.dumps(answer_text(request, "c1"))),
    )
    await app.post(app.envelope(mention("who am I?", "802.000001")))
    await a_sign_in_card(app, "C0CHAN", "802.000001")
    [answer] = await app.answered("C0CHAN", "802.000001", within=20)
    told = json.loads(answer.shown)
    assert told == {
        "error": "NotConnected",
        "message": "files_connect did not run: <@U0ALICE> did not connect files within 2 seconds.",
    }
    card = sign_in_cards(app, "C0CHAN", "802.000001")[-1]
    assert "expired" in json.dumps(card.blocks) and not values(card.blocks)
    assert ("signin_expired", "expired") in await audited(app)


async def test_not_now_by_the_person_declines_and_by_anyone_else_is_refused(
    signing_in: SignInApp,
) -> None:
    app = await signing_in.start()
    app.llm.add(
        calls(("files_connect", {}, "c1")),
        lambda request: text(json.dumps(answer_text(request, "c1"))),
    )
    await app.post(app.envelope(mention("who am I?", "803.000001")))
    card = await a_sign_in_card(app, "C0CHAN", "803.000001")
    request_id = values(card.blocks)["oauth_not_now"]
    assert await app.click("oauth_not_now", request_id, "U0BOB", card.ts) == 200
    await app.after_acks()
    refused = [str(c.args.get("text")) for c in app.slack.calls_to("response_url")]
    assert refused == ["Sorry, only <@U0ALICE> can decide about connecting their own account."]
    request = await app.state.threads.approvals.get(request_id)
    assert request is not None and request.open
    # A link button's click is acked like any other (no warning icon in Slack).
    assert await app.click("oauth_connect", "", "U0ALICE", card.ts) == 200

    assert await app.click("oauth_not_now", request_id, "U0ALICE", card.ts) == 200
    [answer] = await app.answered("C0CHAN", "803.000001", within=20)
    assert json.loads(answer.shown) == {
        "error": "NotConnected",
        "message": "files_connect did not run: <@U0ALICE> chose not to connect files.",
    }
    request = await app.state.threads.approvals.get(request_id)
    assert request is not None and request.state is ApprovalState.DENIED
    card = sign_in_cards(app, "C0CHAN", "803.000001")[-1]
    assert "chose not to connect" in json.dumps(card.blocks) and not values(card.blocks)
    assert ("signin_declined", "not_now") in await audited(app)


async def test_a_sign_in_that_fails_at_the_callback_tells_the_model_at_once(
    signing_in: SignInApp, auth_server: AuthServer
) -> None:
    """The authorization server's answer fails a check (a wrong ``iss``): the request is
    decided then, the model told SignInFailed (not "did not connect within 15 minutes"),
    the card says the sign-in failed; asked again, the person connects."""
    app = await signing_in.start()
    app.llm.add(
        calls(("files_connect", {}, "c1")),
        lambda request: text(json.dumps(answer_text(request, "c1"))),
    )
    await app.post(app.envelope(mention("who am I?", "808.000001")))
    await a_sign_in_card(app, "C0CHAN", "808.000001")
    await until(lambda: bool(ephemerals(app)))
    auth_server.switches.iss = "wrong"
    page = await connect(link_in(ephemerals(app)[0]), status=400)
    assert "failed" in page and "<code>/agent connect files</code>" in page

    [answer] = await app.answered("C0CHAN", "808.000001", within=20)
    assert json.loads(answer.shown) == {
        "error": "SignInFailed",
        "message": "files_connect did not run: the sign-in to files failed; <@U0ALICE> can "
        "try again.",
    }
    card = sign_in_cards(app, "C0CHAN", "808.000001")[-1]
    assert "Sign-in to " in json.dumps(card.blocks) and " failed" in json.dumps(card.blocks)
    assert not values(card.blocks)

    auth_server.switches.iss = "send"  # asked again: a new sign-in, and it connects
    app.llm.add(
        calls(("files_connect", {}, "c2")),
        calls(("files_whoami", {}, "w1")),
        lambda request: text(f"You are {tool_results(request)['w1']}."),
    )
    await app.post(app.envelope(channel_message("again?", "808.000002", thread_ts="808.000001")))
    await until(lambda: len(ephemerals(app)) == 2)
    await connect(link_in(ephemerals(app)[1]))
    [_, again] = await app.answered("C0CHAN", "808.000001", count=2, within=20)
    assert again.shown == "You are alice."


def from_another_workspace(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "user_team": "T0OTHER"}


async def test_an_outsider_is_refused(signing_in: SignInApp) -> None:
    app = await signing_in.start()
    app.slack.users["U0PARTNER"] = {"id": "U0PARTNER", "team_id": "T0OTHER"}
    app.llm.add(
        calls(("files_connect", {}, "c1")),
        lambda request: text(json.dumps(answer_text(request, "c1"))),
    )
    event = from_another_workspace(mention("who am I?", "804.000001", user="U0PARTNER"))
    await app.post(app.envelope(event))
    [answer] = await app.answered("C0CHAN", "804.000001", within=20)
    assert json.loads(answer.shown) == {
        "error": "NotConnected",
        "message": "People from other workspaces cannot connect files here.",
    }
    assert sign_in_cards(app, "C0CHAN", "804.000001") == [] and ephemerals(app) == []
    assert ("signin_declined", "outsider") in await audited(app)


async def test_an_outsider_may_connect_with_allow_external(signing_in: SignInApp) -> None:
    app = await signing_in.start(oauth={"allow_external": True})
    app.slack.users["U0PARTNER"] = {"id": "U0PARTNER", "team_id": "T0OTHER"}
    app.llm.add(
        calls(("files_connect", {}, "c1")),
        calls(("files_whoami", {}, "w1")),
        lambda request: text(f"You are {tool_results(request)['w1']}."),
    )
    event = from_another_workspace(mention("who am I?", "805.000001", user="U0PARTNER"))
    await app.post(app.envelope(event))
    await a_sign_in_card(app, "C0CHAN", "805.000001")
    await until(lambda: bool(ephemerals(app)))
    [sent] = ephemerals(app)
    assert sent["user"] == "U0PARTNER"
    await connect(link_in(sent), user="bob")
    [answer] = await app.answered("C0CHAN", "805.000001", within=20)
    assert answer.shown == "You are bob."


def approval_cards(app: SlackHarness, thread: str) -> list[Message]:
    return [m for m in app.slack.thread("C0CHAN", thread) if is_approval_card(m)]


@pytest.fixture
def public_files(auth_server: AuthServer) -> Iterator[PersonalMcp]:
    """``files`` marking its tool lists public: once someone connected has listed them, a
    person who is not connected is offered "connect to use" copies of its tools."""
    with PersonalMcp(auth_server.url, list_scope="public", list_ttl_ms=60_000) as server:
        yield server


async def test_sign_in_before_approval_and_a_step_up_after_it_runs_once(
    slack_app: SlackHarness, public_files: PersonalMcp
) -> None:
    """A write tool: the sign-in card first (nobody approves a call its person cannot run),
    then the approval card; approved, the server wants more access (403
    insufficient_scope): a second sign-in, and after it the call runs once on the one
    approval."""
    signing_in = SignInApp(slack_app, public_files)
    try:
        app = await signing_in.start()
        # Alice connects once and lists her tools (the server marks the list public) ...
        app.llm.add(
            calls(("files_connect", {}, "c1")),
            calls(("files_whoami", {}, "w1")),
            lambda request: text(f"You are {tool_results(request)['w1']}."),
        )
        await app.post(app.envelope(mention("connect me", "806.000001")))
        await until(lambda: len(ephemerals(app)) == 1)
        await connect(link_in(ephemerals(app)[0]))
        await app.answered("C0CHAN", "806.000001", within=20)
        # ... then her connection is forgotten: she is offered connect-to-use copies.
        side = app.state.oauth
        assert side is not None
        assert await side.tokens_for(Account("T0TEAM", "U0ALICE"), "files").forget(actor="test")

        app.llm.add(
            calls(("files_write_note", {"text": "ship it"}, "n1")),
            lambda request: text(f"Done: {tool_results(request)['n1']}"),
        )
        thread = "806.000002"
        await app.post(app.envelope(mention("note: ship it", thread)))
        await a_sign_in_card(app, "C0CHAN", thread)
        await until(lambda: len(ephemerals(app)) == 2)
        assert approval_cards(app, thread) == []  # nobody is asked to approve yet
        await connect(link_in(ephemerals(app)[1]))

        await until(lambda: bool(approval_cards(app, thread)), 20)
        card = approval_cards(app, thread)[-1]
        approve = values(card.blocks)["approval_approve"]
        assert await app.click("approval_approve", approve, "U0ALICE", card.ts) == 200

        await until(lambda: len(ephemerals(app)) == 3, 20)  # more access: a second sign-in
        await connect(link_in(ephemerals(app)[2]))
        [answer] = await app.answered("C0CHAN", thread, within=30)
        assert answer.shown == "Done: noted for alice: ship it"
        approval = await app.state.threads.approvals.get(approve)
        assert approval is not None and approval.uses == 1  # one approval, one run
        asked = await app.state.threads.approvals.of_turn(approval.entry)
        assert [r.state for r in asked if r.sign_in] == [ApprovalState.APPROVED] * 2
    finally:
        await signing_in.stop()


async def test_a_retried_park_does_not_send_the_link_twice(signing_in: SignInApp) -> None:
    """One round: a call that needs a sign-in and one that needs an approval. The approval
    card's post fails once (Slack: internal_error), after the sign-in card and the ephemeral
    went out: the park is tried again, and the person still gets one ephemeral."""
    app = await signing_in.start(tools={"modules": ["tests.fakes.trading_tools"]})
    slack = app.slack
    failed: list[str] = []

    def post(args: dict[str, Any]) -> dict[str, Any]:
        metadata = args.get("metadata")
        payload = json.loads(metadata) if isinstance(metadata, str) else metadata or {}
        if (payload.get("event_payload") or {}).get("kind") == "approval" and not failed:
            failed.append("approval card")
            return {"ok": False, "error": "internal_error"}
        del slack.methods["chat.postMessage"]
        try:
            return slack._answer("chat.postMessage", args)
        finally:
            slack.methods["chat.postMessage"] = post

    slack.methods["chat.postMessage"] = post
    app.llm.add(
        calls(("files_connect", {}, "w1"), ("place_order", {"symbol": "ACME", "quantity": 1}, "o1"))
    )
    await app.post(app.envelope(mention("who am I, and buy one", "807.000001")))
    await until(lambda: bool(approval_cards(app, "807.000001")), 20)
    assert failed == ["approval card"]
    assert len(sign_in_cards(app, "C0CHAN", "807.000001")) == 1
    assert len(ephemerals(app)) == 1

    async def parked() -> bool:
        cards = sign_in_cards(app, "C0CHAN", "807.000001")
        return bool(cards) and all(r.card_ts for r in await requests_of(app, cards[0]))

    await until_true(parked)
    assert len(ephemerals(app)) == 1


async def test_a_refused_ephemeral_leaves_the_card_and_the_turn_parked(
    signing_in: SignInApp,
) -> None:
    """Slack refuses the link's ephemeral (the person left the channel, say): the turn stays
    parked behind its card, which names `/agent connect`; nothing more is posted than when it
    goes out (the answer so far, the card)."""
    app = await signing_in.start()
    app.slack.fail("chat.postEphemeral", "user_not_in_channel", times=50)
    app.llm.add(calls(("files_connect", {}, "c1")))
    await app.post(app.envelope(mention("who am I on files?", "809.000001")))
    card = await a_sign_in_card(app, "C0CHAN", "809.000001")
    await until(lambda: bool(app.slack.calls_to("chat.postEphemeral")))
    assert "connect files" in json.dumps(card.blocks)
    posted = [m for m in app.slack.thread("C0CHAN", "809.000001") if m.user == card.user]
    assert [kind_of(m) for m in posted if m.ts != "809.000001"] == ["answer", "signin"]
    [request] = await requests_of(app, card)
    assert request.open and not request.shown  # a later park may send it
    # Parked: a later message in the thread waits behind it, and is told why.
    later = channel_message("and then?", "809.000002", thread_ts="809.000001")
    await app.post(app.envelope(later))
    await until(lambda: bool(notes(app, "809.000001")))
    assert len(app.slack.calls_to("chat.postEphemeral")) == 1  # the park was not retried


async def test_a_channel_without_the_server_offers_none_of_its_tools_and_asks_nobody(
    signing_in: SignInApp,
) -> None:
    """The channel's settings narrow the person's own tools too (inside the sign-in gate):
    a call of a server the channel does not offer is refused before anyone is asked to
    connect."""
    app = await signing_in.start(channels={"C0CHAN": {"mcp_servers": ["elsewhere"]}})
    app.llm.add(
        calls(("files_connect", {}, "w1")),
        text("Not here."),
        text("Elsewhere, then."),
    )
    await app.post(app.envelope(mention("who am I on files?", "809.000001")))
    await app.answered("C0CHAN", "809.000001")
    assert not [name for name in app.llm.offered_tools(0) if name.startswith(PREFIX)]
    refused = json.loads(tool_results(app.llm.requests[1])["w1"])
    assert refused["error"] == "ToolNotAllowed"
    assert "This channel's settings do not offer it." in refused["message"]
    assert sign_in_cards(app, "C0CHAN", "809.000001") == [] and ephemerals(app) == []
    # Another channel offers them.
    await app.post(app.envelope(mention("and here?", "809.000002", channel="C0OTHER")))
    await app.answered("C0OTHER", "809.000002")
    assert [name for name in app.llm.offered_tools(2) if name.startswith(PREFIX)]
