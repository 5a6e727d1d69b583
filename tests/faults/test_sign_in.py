"""Each person signs in (issue 32), end to end: two real ``slack-agent run`` replicas on the
shared Redis (this test's own key prefix), the fake Slack and model, the test authorization
server and its MCP server ``files`` as processes (tests/fakes/oauth_server.py,
tests/fakes/personal_mcp.py), and browsers that follow the start link the way a person does:
the start page on the replica the link names, Continue, the authorization server's sign-in
as the person chosen, and back to the callback on the OTHER replica (what a load balancer
may do), with the browser's cookie.

``files`` offers ``whoami`` and ``read_private`` to a caller without a token, so a person
who never connected is offered them as "connect to use" copies: the model calls
``files_read_private`` at once, the server refuses the call (401), and the person is asked
to connect. The tests share one deployment (``deployment``, started once for the module: four
processes start in it), and each begins as if from a clean start (``World.begin``): people of
its own (Slack users new to the bot, who sign in as alice and bob), no live token of alice's
or bob's at the authorization server, and it looks only at what happened since it began (Slack
calls and messages, model requests, the authorization server's counts, audit entries). The
replicas log at INFO, except in ``test_nothing_secret_anywhere``, which has a deployment of its
own (``worlds``: DEBUG, spans exported to a fake collector, stopped at its end).
"""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import aiohttp
import pytest
import pytest_asyncio
import yaml

from bot.oauth.flows import COOKIE
from bot.oauth.records import FRESH_FOR_S
from bot.observability.redaction import forms
from bot.process.state import State, open_state
from bot.state.redis.connection import Redis
from tests.bot.oauth.signing_in import AS_SENT, start_form
from tests.bot.observability.test_trace_processes import Collector
from tests.conftest import REDIS_URL, config_with_prefix
from tests.fakes.llm_server import FakeLLM, Reply, Request, calls, text, tool_results
from tests.fakes.oauth_server import AuthServerProcess
from tests.fakes.personal_mcp import FILES, PersonalMcpProcess
from tests.fakes.slack_harness import (
    app_environment,
    command_fields,
    event_envelope,
    is_progress,
    is_sign_in_card,
    is_waiting_note,
    mention,
    signed_headers,
)
from tests.fakes.slack_server import TEAM, Call, FakeSlack, Message
from tests.faults.replicas import Replica
from tests.waiting import until, until_true

# Each test takes 5-20 s alone on 2 CPUs, 40-55 s beside another fault test (-n 4) with
# the machine busy; the first also starts the shared deployment.
pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]
ON_THE_DEPLOYMENT = pytest.mark.asyncio(loop_scope="module")  # its servers' event loop

KEY = base64.b64encode(bytes(range(32))).decode()  # SLACK_AGENT_SECRET_KEY
NAMES = ("alice", "bob")  # who people sign in as at the authorization server
SAID = "Your plan: "  # the scripted model's answer, then the call's result
START = "/oauth/start?state="
WAIT_S = 30.0  # for a turn, a link or an answer, on a loaded 2-CPU machine


def model(request: Request) -> Reply:
    """The scripted model, for any turn on any replica: read the person's plan (a tool of
    ``files``), then say what came back."""
    results = tool_results(request)
    if "plan" not in results:
        return calls(("files_read_private", {"name": "plan"}, "plan"))
    return text(SAID + results["plan"])


def user_id(name: str, test: int) -> str:
    """The Slack user who signs in as ``name``, in the ``test``-th test on a deployment."""
    return f"U0{name.upper()}{test}"


def name_of(user: str) -> str:
    """Who the Slack user ``user`` signs in as at the authorization server."""
    [name] = [name for name in NAMES if user.removeprefix(f"U0{name.upper()}").isdigit()]
    return name


def plan_of(user: str) -> str:
    return FILES[name_of(user)]["plan"]


def question(user: str) -> str:
    return f"{name_of(user)} asks: what is in my plan?"


def blocks_of(args: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = args.get("blocks") or []
    return list(json.loads(blocks) if isinstance(blocks, str) else blocks)


def link_in(args: dict[str, Any]) -> str:
    """The link button's url in a message's blocks."""
    [link] = [
        str(element["url"])
        for block in blocks_of(args)
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
        if element.get("url")
    ]
    return link


def state_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["state"][0]


def on(url: str, replica: Replica) -> str:
    """``url`` with its host and port those of ``replica`` (a load balancer's choice)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"127.0.0.1:{replica.port}"))


class Browser:
    """A person's browser: a cookie jar that keeps what the bot's pages set."""

    def __init__(self) -> None:
        self.jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1
        self.session = aiohttp.ClientSession(cookie_jar=self.jar)

    async def sign_in(self, link: str, person: str) -> str:
        """Follow the start link up to the authorization server's answer: the start page,
        Continue (the cookie is set), the authorization request, the sign-in as ``person``.
        Returns the callback URL the authorization server sends the browser to."""
        async with self.session.get(link, allow_redirects=False) as page:
            assert page.status == 200, await page.text()
            form = start_form(await page.text())
        parts = urlsplit(link)
        action = urlunsplit(parts._replace(query=""))
        async with self.session.post(
            action, data=form, headers=AS_SENT, allow_redirects=False
        ) as started:
            assert started.status == 303, await started.text()
            authorize = started.headers["Location"]
        async with self.session.get(authorize, allow_redirects=False) as asked:
            assert asked.status == 302, await asked.text()
            login = asked.headers["Location"]
        async with self.session.get(f"{login}&user={person}", allow_redirects=False) as signed:
            assert signed.status == 302, await signed.text()
            return signed.headers["Location"]

    async def get(self, url: str) -> tuple[int, str]:
        async with self.session.get(url, allow_redirects=False) as response:
            return response.status, await response.text()

    def cookies(self, name: str | None = None) -> list[str]:
        """The values of the cookies it keeps (named ``name``)."""
        return [cookie.value for cookie in self.jar if name is None or cookie.key == name]

    async def close(self) -> None:
        await self.session.close()


class World:
    """One deployment: the authorization server and ``files`` (processes), the fake Slack and
    model, two ``slack-agent run`` replicas (A, whose address is
    ``oauth.redirect_base_url``, and B) on the shared Redis under ``prefix``."""

    def __init__(
        self,
        directory: Path,
        prefix: str,
        auth_options: Iterable[str] = (),
        collector: Collector | None = None,
        log_level: str = "INFO",
    ) -> None:
        self.directory = directory
        self.log_level = log_level
        self.prefix = prefix
        self.auth = AuthServerProcess(*auth_options)
        self.files = PersonalMcpProcess(self.auth.url, "--anonymous-offer", "whoami,read_private")
        self.slack = FakeSlack()
        self.llm = FakeLLM()
        self.llm.otherwise = model
        self.collector = collector
        self.replicas = [Replica(i, directory / f"replica-{i}.log") for i in (1, 2)]
        self.browsers: list[Browser] = []
        self.followed: dict[str, str] = {}  # start link -> the Slack user it was followed for
        self.said: list[str] = []  # what the bot answered slash commands
        self.state = open_state(REDIS_URL, config_with_prefix(prefix))  # to read its keys
        self.tests = 0  # how many began on it
        self.people = (user_id("alice", 0), user_id("bob", 0))  # the test's: begin()
        self.began_at = 0.0  # time.time()
        self._calls_from = self._messages_from = self._requests_from = 0
        self._counts_before: dict[str, Any] = {}
        self._envs: dict[int, dict[str, str]] = {}
        self._config: dict[str, Any] = {}
        self._config_path = directory / "agent.yaml"

    @property
    def a(self) -> Replica:
        return self.replicas[0]

    @property
    def b(self) -> Replica:
        return self.replicas[1]

    # --- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        await self.slack.start()
        await self.llm.start()
        await asyncio.gather(
            asyncio.to_thread(self.auth.start), asyncio.to_thread(self.files.start)
        )
        config = {
            "redis": {"key_prefix": self.prefix},
            "llm": {"model": "fake-model", "max_retries": 0},
            "slack": {"streaming": False},
            "queue": {"claim_idle_s": 10, "lock_ttl_s": 10},
            "tools": {"builtins": []},
            "mcp": {
                "servers": {
                    "files": {
                        "url": self.files.url,
                        "auth": "oauth",
                        "prefix": "files_",
                        "approval": "writes",
                    }
                }
            },
            "oauth": {"redirect_base_url": f"http://127.0.0.1:{self.a.port}"},
            "approval": {"timeout_s": 30},
        }
        path = self.directory / "agent.yaml"
        self._config, self._config_path = config, path
        path.write_text(yaml.safe_dump(config))
        extra = {"SLACK_AGENT_SECRET_KEY": KEY, "LOG_LEVEL": self.log_level}
        if self.collector is not None:
            extra.update(
                OTEL_EXPORTER_OTLP_ENDPOINT=self.collector.url, OTEL_BSP_SCHEDULE_DELAY="200"
            )
        env = app_environment(self.slack.api_url, self.llm.base_url, REDIS_URL, path, **extra)
        for replica in self.replicas:
            own = {"SLACK_BOT_TOKEN": replica.token, "OPENAI_API_KEY": replica.llm_key}
            self._envs[replica.index] = {**env, **own}
        await self.start_replicas()

    async def start_replicas(self) -> None:
        """Start both; when replica A's port was taken meanwhile (it moves to another), its
        config names the new one (oauth.redirect_base_url) and both start again."""
        for _ in range(3):
            named = self.a.port  # oauth.redirect_base_url's
            for replica in self.replicas:
                await replica.start(self._envs[replica.index])
            await asyncio.gather(*(replica.healthy(40) for replica in self.replicas))
            if self.a.port == named:
                return
            await self.kill_replicas()
            self._config["oauth"]["redirect_base_url"] = f"http://127.0.0.1:{self.a.port}"
            self._config_path.write_text(yaml.safe_dump(self._config))
        raise AssertionError("replica A kept moving to another port")

    async def kill_replicas(self) -> None:
        await asyncio.gather(*(replica.kill() for replica in self.replicas))

    async def stop_replicas(self) -> None:
        """SIGTERM both (their spans are exported as they exit) and wait for them."""
        for replica in self.replicas:
            replica.signal(signal.SIGTERM)
        for replica in self.replicas:
            assert await replica.exited(30), f"{replica.name} did not stop"

    async def stop(self) -> None:
        """Stop everything and remove its keys."""
        await self.close_browsers()
        await asyncio.gather(*(r.kill() for r in self.replicas), return_exceptions=True)
        for replica in self.replicas:
            replica.kill_now()
        self.files.kill()
        self.auth.kill()
        await self.llm.stop()
        await self.slack.stop()
        try:
            keys = [key async for key in self.state.client.scan_iter(match=f"{self.prefix}*")]
            if keys:
                await self.state.client.delete(*keys)
        finally:
            await self.state.aclose()

    async def begin(self) -> tuple[str, str]:
        """A test begins on this deployment: returns its people (alice's and bob's Slack
        users, new to the bot and to Slack's users.info); no token of alice's or bob's is
        live at the authorization server; what the test looks at (calls, messages, requests,
        counts, audit entries) is what happens from now on. Replicas a test before left dead
        are started again."""
        if any(r.process is None or r.process.returncode is not None for r in self.replicas):
            await self.kill_replicas()
            await self.start_replicas()
        self.tests += 1
        self.people = (user_id("alice", self.tests), user_id("bob", self.tests))
        self.slack.users.update({user: {"id": user} for user in self.people})
        for name in NAMES:
            await self.revoke(name)
        self.followed.clear()
        self.said.clear()
        self._calls_from, self._messages_from = len(self.slack.calls), len(self.slack.messages)
        self._requests_from = len(self.llm.requests)
        self._counts_before = dict(await self._auth("GET", "/_test/counts"))
        self.began_at = time.time()
        return self.people

    async def close_browsers(self) -> None:
        for browser in self.browsers:
            await browser.close()
        self.browsers.clear()

    def print_tails(self) -> None:
        """The last lines of each replica's log (pytest shows them when the test failed)."""
        for replica in self.replicas:
            print(f"--- {replica.name}\n{replica.tail(80)}")

    def logs(self) -> str:
        return "\n".join(r.log_path.read_text(errors="replace") for r in self.replicas)

    # --- Slack's side ----------------------------------------------------------------------

    async def _post(self, replica: Replica, body: str, content_type: str) -> aiohttp.ClientResponse:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"http://127.0.0.1:{replica.port}/slack/events",
                data=body,
                headers=signed_headers(body, content_type),
            ) as response,
        ):
            await response.read()
            return response

    async def ask(self, replica: Replica, user: str, thread: str) -> None:
        """``user`` mentions the bot in a new thread ``thread``, delivered to ``replica``."""
        event = mention(question(user), thread, user=user)
        body = json.dumps(event_envelope(event, f"Ev{thread}"))
        response = await self._post(replica, body, "application/json")
        assert response.status == 200

    async def command(self, replica: Replica, user: str, words: str) -> dict[str, Any]:
        """``/agent <words>`` by ``user``; the bot's reply (in the ack, or when it took
        longer, through the response_url)."""
        fields = {**command_fields(words, user), "response_url": self.slack.response_url}
        body = urlencode(fields)
        late = len(self.slack.calls_to("response_url"))
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"http://127.0.0.1:{replica.port}/slack/events",
                data=body,
                headers=signed_headers(body, "application/x-www-form-urlencoded"),
            ) as response,
        ):
            assert response.status == 200, await response.text()
            said = await response.text()
        if not said:
            await until(lambda: len(self.slack.calls_to("response_url")) > late, WAIT_S)
            said = json.dumps(self.slack.calls_to("response_url")[late].args)
        self.said.append(said)
        return dict(json.loads(said))

    def calls(self) -> list[Call]:
        """The Slack calls since the test began."""
        return self.slack.calls[self._calls_from :]

    def messages(self) -> list[Message]:
        """The messages posted since the test began, as they are now."""
        return list(self.slack.messages.values())[self._messages_from :]

    def requests(self) -> list[dict[str, Any]]:
        """The model requests since the test began."""
        return self.llm.requests[self._requests_from :]

    def ephemerals(
        self, user: str | None = None, thread: str | None = None
    ) -> list[dict[str, Any]]:
        """The arguments of every chat.postEphemeral (to ``user``, in ``thread``) since the
        test began."""
        return [
            call.args
            for call in self.calls()
            if call.method == "chat.postEphemeral"
            and (user is None or call.args.get("user") == user)
            and (thread is None or call.args.get("thread_ts") == thread)
        ]

    async def link_for(self, user: str, thread: str, count: int = 1) -> str:
        """The start link of the ``count``-th ephemeral to ``user`` in ``thread``."""
        await until(lambda: len(self.ephemerals(user, thread)) >= count, WAIT_S)
        link = link_in(self.ephemerals(user, thread)[count - 1])
        assert link.startswith(f"http://127.0.0.1:{self.a.port}{START}")
        return link

    def ran_on(self, thread: str) -> set[str]:
        """The bot tokens of the replicas that posted in ``thread`` (who ran its turns)."""
        return {
            call.token
            for call in self.slack.calls_to("chat.postMessage")
            if call.args.get("thread_ts") == thread
        }

    async def turns_on_both(self, user: str, base: str) -> None:
        """``user`` asks in new threads (``<base>00001``, ...), alternately on A and B, until
        each replica has run one of the turns; each is answered with their plan."""
        ran: set[str] = set()
        for number in range(1, 7):
            thread = f"{base}{number:05d}"
            await self.ask(self.replicas[number % 2], user, thread)
            assert await self.answer(thread) == SAID + plan_of(user)
            ran |= self.ran_on(thread)
            if ran == {self.a.token, self.b.token}:
                return
        raise AssertionError(f"{user}'s turns ran on one replica only: {ran}")

    def cards(self, thread: str) -> list[Message]:
        return [m for m in self.slack.thread("C0CHAN", thread) if is_sign_in_card(m)]

    def said_in(self, thread: str) -> list[str]:
        """What the thread shows as the bot's answers (no card, note or progress)."""
        return [
            m.shown
            for m in self.slack.thread("C0CHAN", thread)
            if not m.streaming
            and not is_progress(m)
            and not is_sign_in_card(m)
            and not is_waiting_note(m)
        ]

    async def answer(self, thread: str) -> str:
        """The turn's answer, once the thread shows it."""
        await until(lambda: any(s.startswith(SAID) for s in self.said_in(thread)), WAIT_S)
        return next(s for s in self.said_in(thread) if s.startswith(SAID))

    # --- the person's browser --------------------------------------------------------------

    def browser(self) -> Browser:
        browser = Browser()
        self.browsers.append(browser)
        return browser

    async def connect(self, link: str, user: str) -> None:
        """``user`` follows ``link`` and signs in as themself; the callback goes to B."""
        self.followed[link] = user
        browser = self.browser()
        callback = await browser.sign_in(link, name_of(user))
        # B, unless B's port no longer answers as B (a port race of this test's own set-up,
        # seen in CI): then A, which any replica's callback may be.
        target = self.b if await self.answers_as_replica(self.b) else self.a
        status, page = await browser.get(on(callback, target))
        assert status == 200, page

    async def answers_as_replica(self, replica: Replica) -> bool:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{replica.port}/healthz") as answer,
            ):
                return answer.status == 200
        except aiohttp.ClientError:
            return False

    # --- the authorization server ----------------------------------------------------------

    async def _auth(self, method: str, path: str, **form: str) -> Any:
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, self.auth.url + path, data=form or None) as response,
        ):
            assert response.status == 200, await response.text()
            return await response.json()

    async def counts(self) -> dict[str, Any]:
        """The authorization server's counts since the test began."""
        now, before = dict(await self._auth("GET", "/_test/counts")), self._counts_before
        since: dict[str, Any] = {k: v - before.get(k, 0) for k, v in now.items() if k != "grants"}
        granted = before.get("grants", {})
        since["grants"] = {k: v - granted.get(k, 0) for k, v in now["grants"].items()}
        return since

    async def grants(self, kind: str) -> int:
        """Tokens granted since the test began, by ``kind`` of grant."""
        return int((await self.counts())["grants"].get(kind, 0))

    async def revoke(self, person: str) -> int:
        return int((await self._auth("POST", f"/_test/revoke?user={person}"))["revoked"])

    async def tokens_live(self, seconds: int) -> None:
        await self._auth("POST", "/_test/switches", expires_in=str(seconds))

    async def issued(self) -> set[str]:
        """Every secret the authorization server issued or was sent."""
        return set((await self._auth("GET", "/_test/secrets"))["secrets"])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def deployment(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    """The deployment the module's tests share, started for the first; stopped (its keys
    removed) after the last."""
    world = World(tmp_path_factory.mktemp("sign-in"), f"test:{uuid.uuid4().hex[:12]}:")
    try:
        await world.start()
        yield world
    finally:
        await world.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def world(deployment: World) -> AsyncIterator[World]:
    """The shared deployment, begun for this test (``World.begin``), its tokens living an
    hour as when the authorization server starts; the tails of the replicas' logs are
    printed afterwards (pytest shows them when the test failed)."""
    await deployment.begin()
    await deployment.tokens_live(3600)
    try:
        yield deployment
    finally:
        await deployment.close_browsers()
        deployment.print_tails()


@pytest.fixture
async def worlds(tmp_path: Path, key_prefix: str) -> AsyncIterator[Callable[..., Awaitable[World]]]:
    """Makes a deployment of this test's own (started, and begun); stops it afterwards
    whatever happened, and prints the tails of the replicas' logs."""
    made: list[World] = []

    async def make(
        *auth_options: str, collector: Collector | None = None, log_level: str = "INFO"
    ) -> World:
        world = World(tmp_path, key_prefix, auth_options, collector, log_level)
        made.append(world)
        await world.start()
        await world.begin()
        return world

    try:
        yield make
    finally:
        for world in made:
            await world.stop()
            world.print_tails()


async def token_of(state: State, user: str) -> tuple[int, float]:
    """The version and expiry (epoch seconds) of ``user``'s token for ``files``, as the
    record says in plain."""
    client, keys = state.client, state.keys
    named = await client.hget(keys.oauth_conns(TEAM, user), "files")
    assert named is not None, f"{user} is not connected"
    record = await client.hgetall(keys.oauth_token(TEAM, user, "files", json.loads(named)["iss8"]))
    return int(record["ver"]), float(record["exp"])


async def audited(world: World, action: str) -> list[str]:
    """The outcomes of the ``connection`` audit entries with ``action`` since the test
    began."""
    entries = await world.state.shared.audit.latest(200)
    return [
        e.outcome
        for e in entries
        if e.kind == "connection" and e.action == action and e.at >= world.began_at
    ]


async def connected_by_a_turn(world: World, replica: Replica, user: str, thread: str) -> None:
    """``user`` asks on ``replica``, gets the link, connects, and is answered."""
    await world.ask(replica, user, thread)
    await world.connect(await world.link_for(user, thread), user)
    assert await world.answer(thread) == SAID + plan_of(user)


# --- 1 --------------------------------------------------------------------------------------


@ON_THE_DEPLOYMENT
async def test_two_people_see_different_results(world: World) -> None:
    alice, bob = world.people
    await world.ask(world.a, alice, "901.000001")
    await world.ask(world.b, bob, "901.000002")
    links = {
        alice: await world.link_for(alice, "901.000001"),
        bob: await world.link_for(bob, "901.000002"),
    }
    assert all(world.cards(thread) for thread in ("901.000001", "901.000002"))
    await asyncio.gather(*(world.connect(link, user) for user, link in links.items()))

    answers = {alice: await world.answer("901.000001"), bob: await world.answer("901.000002")}
    assert answers == {alice: SAID + plan_of(alice), bob: SAID + plan_of(bob)}
    # What one person's call returned never reached the other's turn.
    for user, other in ((alice, bob), (bob, alice)):
        theirs = [json.dumps(r) for r in world.requests() if question(user) in json.dumps(r)]
        assert len(theirs) == 2  # the call, then the answer
        assert plan_of(user) in theirs[1]
        assert not any(plan_of(other) in request for request in theirs)
    # Each answer delivered once, in its own thread.
    assert world.said_in("901.000001") == [answers[alice]]
    assert world.said_in("901.000002") == [answers[bob]]
    for plan in (plan_of(alice), plan_of(bob)):
        shown = [m for m in world.messages() if plan in m.shown]
        assert len(shown) == 1
    # Each was asked once, alone; both signed in through the other replica's callback.
    assert sorted(e["user"] for e in world.ephemerals()) == [alice, bob]
    assert await world.grants("authorization_code") == 2


# --- 2 --------------------------------------------------------------------------------------


@ON_THE_DEPLOYMENT
async def test_revoked_token_asks_again(world: World) -> None:
    alice, _ = world.people
    await connected_by_a_turn(world, world.a, alice, "902.000001")

    assert await world.revoke("alice") == 1  # as alice would on the server's own site
    await world.ask(world.b, alice, "902.000002")
    # The call was refused (401), the refresh too: she is asked again, in the new thread.
    link = await world.link_for(alice, "902.000002")
    assert world.cards("902.000002")
    assert (await world.counts())["refused_refreshes"] == 1
    assert await audited(world, "refresh_failed") == ["invalid_grant"]
    assert await world.grants("authorization_code") == 1
    await world.connect(link, alice)

    assert await world.answer("902.000002") == SAID + plan_of(alice)
    assert await world.grants("authorization_code") == 2
    assert len(world.ephemerals(alice)) == 2


@ON_THE_DEPLOYMENT
async def test_connecting_again_reaches_every_replica(world: World) -> None:
    """Disconnected (``/agent disconnect``: revoked at the server) while both replicas hold
    a session with her token, then connected again through a turn: each replica's next calls
    use the new connection. (Test 2 found it, when its turns fell that way: a replica still
    holding her old token took it for the new connection's, had its refresh refused and
    forgot her new connection.)"""
    alice, _ = world.people
    await connected_by_a_turn(world, world.a, alice, "908.000001")
    await world.turns_on_both(alice, "908.1")  # each replica keeps a session with her token

    said = await world.command(world.b, alice, "disconnect files")
    assert "revoked it" in said["text"]
    await connected_by_a_turn(world, world.a, alice, "908.200001")
    await world.turns_on_both(alice, "908.3")

    assert len(world.ephemerals(alice)) == 2  # never asked again once connected
    assert await world.grants("authorization_code") == 2
    assert await audited(world, "refresh_failed") == []
    assert await audited(world, "disconnected") == ["ok"]


# --- 3 --------------------------------------------------------------------------------------


@ON_THE_DEPLOYMENT
async def test_two_replicas_refresh_once(world: World) -> None:
    alice, _ = world.people
    await world.tokens_live(12)  # alice's first token lives 12 s
    await connected_by_a_turn(world, world.a, alice, "903.000001")
    await world.tokens_live(3600)  # what the refresh gives lives long: one refresh is needed
    ver, expires_at = await token_of(world.state, alice)

    async def stale() -> bool:  # fewer than FRESH_FOR_S seconds left: refreshed before use
        return expires_at - time.time() < FRESH_FOR_S - 1

    await until_true(stale, WAIT_S)
    assert await token_of(world.state, alice) == (ver, expires_at)  # nobody refreshed it yet
    refreshed_before = await world.grants("refresh_token")

    # Her turns on A and on B, at once; each lists her tools and calls one.
    await asyncio.gather(
        world.ask(world.a, alice, "903.000002"), world.ask(world.b, alice, "903.000003")
    )
    assert await world.answer("903.000002") == SAID + plan_of(alice)
    assert await world.answer("903.000003") == SAID + plan_of(alice)

    assert await world.grants("refresh_token") == refreshed_before + 1
    counts = await world.counts()
    assert counts.get("replayed_refreshes", 0) == 0 and counts["refused_refreshes"] == 0
    new_ver, new_expiry = await token_of(world.state, alice)
    assert new_ver == ver + 1 and new_expiry > time.time() + 3000
    assert len(world.ephemerals(alice)) == 1  # no sign-in again


# --- 4 --------------------------------------------------------------------------------------


@ON_THE_DEPLOYMENT
async def test_restart_keeps_connections(world: World) -> None:
    alice, _ = world.people
    await world.tokens_live(12)  # so the turn after the restart refreshes
    await connected_by_a_turn(world, world.a, alice, "904.000001")
    _, expires_at = await token_of(world.state, alice)

    refreshed_before = await world.grants("refresh_token")
    await world.kill_replicas()  # SIGKILL: nothing of the connection is in a process
    await world.start_replicas()

    async def stale() -> bool:  # the next use refreshes it
        return expires_at - time.time() < FRESH_FOR_S - 1

    await until_true(stale, WAIT_S)
    assert await world.grants("refresh_token") == refreshed_before

    await world.ask(world.b, alice, "904.000002")
    assert await world.answer("904.000002") == SAID + plan_of(alice)
    assert len(world.ephemerals(alice)) == 1 and not world.cards("904.000002")
    assert await world.grants("authorization_code") == 1
    # Refreshed from what was kept sealed in Redis (the token endpoint found at sign-in).
    assert await world.grants("refresh_token") >= refreshed_before + 1


# --- 5 --------------------------------------------------------------------------------------


@ON_THE_DEPLOYMENT
async def test_forged_state_refused(world: World) -> None:
    alice, _ = world.people
    await world.ask(world.a, alice, "905.000001")
    link = await world.link_for(alice, "905.000001")
    alices = world.browser()
    callback = await alices.sign_in(link, "alice")  # her code, not yet brought back

    forger = world.browser()
    forged = on(callback, world.b).replace(state_of(link), "forged-" + "x" * 40)
    status, _ = await forger.get(forged)
    assert status == 400  # no such sign-in
    status, _ = await forger.get(on(callback, world.b))
    assert status == 403  # her state and code, from a browser that did not start it
    assert await world.grants("authorization_code") == 0
    assert sorted(await audited(world, "callback_refused")) == ["other_browser", "unknown_state"]

    # Neither spent her sign-in: her own browser finishes it.
    status, page = await alices.get(on(callback, world.b))
    assert status == 200, page
    assert await world.answer("905.000001") == SAID + plan_of(alice)
    assert await world.grants("authorization_code") == 1


# --- 6 --------------------------------------------------------------------------------------


async def values_under(client: Redis, prefix: str) -> list[str]:
    """Every key under ``prefix`` and everything it holds, as text."""
    found = []
    async for key in client.scan_iter(match=f"{prefix}*", count=500):
        kind = await client.type(key)
        value: Any
        if kind == "string":
            value = await client.get(key)
        elif kind == "hash":
            value = await client.hgetall(key)
        elif kind == "set":
            value = sorted(await client.smembers(key))
        elif kind == "list":
            value = await client.lrange(key, 0, -1)
        elif kind == "zset":
            value = await client.zrange(key, 0, -1, withscores=True)
        elif kind == "stream":
            value = await client.xrange(key)
        else:
            value = f"<{kind}>"
        found.append(f"{key} {kind} {value!r} {json.dumps(value, default=str)}")
    return found


def leaked(secrets: Iterable[str], *places: str) -> set[str]:
    """The secrets found, in any form, in any of ``places``."""
    return {
        secret
        for secret in secrets
        for place in places
        if any(form in place for form in forms(secret))
    }


async def test_nothing_secret_anywhere(worlds: Callable[..., Awaitable[World]]) -> None:
    collector = Collector()
    await collector.start()
    try:
        world = await worlds("--expires-in", "12", collector=collector, log_level="DEBUG")
        alice, bob = world.people
        # Two sign-ins, a refresh, a revoked grant and a sign-in again (with a forged
        # callback on the way), and a disconnect revoking at the authorization server.
        await connected_by_a_turn(world, world.a, alice, "906.000001")
        await connected_by_a_turn(world, world.b, bob, "906.000002")
        _, expires_at = await token_of(world.state, alice)

        async def stale() -> bool:
            return expires_at - time.time() < FRESH_FOR_S - 1

        await until_true(stale, WAIT_S)
        refreshed = await world.grants("refresh_token")
        await world.ask(world.b, alice, "906.000003")
        assert await world.answer("906.000003") == SAID + plan_of(alice)
        assert await world.grants("refresh_token") > refreshed

        assert await world.revoke("alice") >= 1
        await world.ask(world.a, alice, "906.000004")
        link = await world.link_for(alice, "906.000004")
        world.followed[link] = alice
        browser = world.browser()
        callback = await browser.sign_in(link, "alice")
        assert (await world.browser().get(on(callback, world.b)))[0] == 403
        assert (await browser.get(on(callback, world.b)))[0] == 200
        assert await world.answer("906.000004") == SAID + plan_of(alice)

        said = await world.command(world.a, bob, "disconnect files")
        assert "revoked it" in said["text"]
        assert (await world.counts())["revocations"] >= 1

        await until(
            lambda: any(span[1] == "execute_tool files_read_private" for span in collector.spans),
            WAIT_S,
        )
        await world.stop_replicas()  # what is left of the spans is exported now
        secrets = await world.issued()
    finally:
        await collector.stop()

    links = {link_in(args): args for args in world.ephemerals()}
    states = {state_of(link) for link in links}
    cookies = {value for browser in world.browsers for value in browser.cookies()}
    bound = {value for browser in world.browsers for value in browser.cookies(COOKIE)}
    assert len(links) == 3 and len(bound) == 3  # alice twice, bob once
    assert states <= secrets  # each start link's state reached the authorization server
    everything = secrets | cookies
    assert len(everything) > 20  # tokens, codes, states, verifiers, a client secret

    # The logs (DEBUG) saw the sign-ins and the token requests, and say none of them.
    logs = world.logs()
    assert " DEBUG " in logs and "waits for its person to connect files" in logs
    assert f"{world.auth.url}/token" in logs
    assert leaked(everything, logs) == set()
    # Redis: every key under the prefix and all it holds.
    stored = await values_under(world.state.client, world.prefix)
    assert any(":oauth:token:" in line for line in stored)
    assert leaked(everything, *stored) == set()
    # Slack: the start link only in the ephemeral to the person it was for.
    for call in world.slack.calls:
        shown = json.dumps(call.args)
        if call.method == "chat.postEphemeral":
            link = link_in(call.args)
            assert world.followed[link] == call.args["user"]
            for form in forms(link):
                shown = shown.replace(form, "")
        assert leaked(everything, shown) == set(), call.method
    assert leaked(everything, *world.said) == set()
    # The model, and every span exported.
    assert leaked(everything, *(json.dumps(r) for r in world.llm.requests)) == set()
    bodies = [body.decode(errors="replace") for body in collector.bodies]
    assert bodies and leaked(everything, *bodies) == set()
