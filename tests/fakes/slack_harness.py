"""The real app, running: HTTP server + in-process worker and scheduler, wired to the fake
Slack, the fake LLM and a real Redis. Tests send it signed requests as Slack would."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
import yaml

from bot.process.listen import EventsPort
from bot.process.run import SlackProcess, assemble
from bot.process.services import Services, build_services
from bot.process.state import State
from bot.process.workers import WorkerLoop
from bot.slack.inbound.http import ShortAnswers, http_app
from tests.fakes.llm_server import FakeLLM
from tests.fakes.slack_server import BOT_USER, TEAM, FakeSlack, Message
from tests.waiting import until

SECRET = "test-signing-secret"
_TRIGGERS = itertools.count(1)


def sign(body: str, timestamp: int, secret: str = SECRET) -> str:
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def app_environment(
    slack_api_url: str, llm_base_url: str, redis_url: str, config: Path, **extra: str
) -> dict[str, str]:
    """The environment of a `slack-agent` process wired to the fakes (nothing inherited from
    the caller's OPENAI_, SLACK_ or REDIS_ variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SLACK_", "REDIS_"))}
    env.update(
        OPENAI_BASE_URL=llm_base_url,
        OPENAI_API_KEY="sk-test",
        REDIS_URL=redis_url,
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack_api_url,
        SLACK_AGENT_CONFIG=str(config),
        **extra,
    )
    return env


def signed_headers(
    body: str,
    content_type: str = "application/json",
    *,
    timestamp: int | None = None,
    secret: str = SECRET,
    signature: str | None = None,
) -> dict[str, str]:
    """The headers Slack sends with ``body``: a timestamp and its HMAC signature."""
    stamp = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": str(stamp),
        "X-Slack-Signature": signature or sign(body, stamp, secret),
    }


def event_envelope(event: dict[str, Any], event_id: str) -> dict[str, Any]:
    """An Events API envelope around ``event``, as Slack delivers it."""
    return {
        "token": "legacy",
        "team_id": TEAM,
        "api_app_id": "A0APP",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": event,
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
    }


def command_fields(
    text: str,
    user: str = "U0ALICE",
    command: str = "/agent",
    team: str = TEAM,
    channel: str = "C0CHAN",
) -> dict[str, str]:
    """The fields of a slash command request (``team``: the caller's workspace; ``channel``:
    where it is typed); each has a trigger id of its own, as Slack's do (so two alike are two
    requests, not a replay)."""
    return {
        "command": command,
        "text": text,
        "user_id": user,
        "team_id": team,
        "channel_id": channel,
        "trigger_id": f"t.{next(_TRIGGERS)}",
        "response_url": "",
    }


def button_click(
    action_id: str,
    value: str,
    user: str,
    message_ts: str,
    response_url: str,
    state: dict[str, Any] | None = None,
    team: str | None = TEAM,
) -> dict[str, Any]:
    """The block_actions payload of a button press on a message in C0CHAN; ``state`` is the
    values of the message's inputs (``{"values": {block_id: {action_id: {...}}}}``);
    ``team`` the clicker's own workspace as Slack names it (``user.team_id``; None: left
    out)."""
    clicker: dict[str, Any] = {"id": user} if team is None else {"id": user, "team_id": team}
    payload: dict[str, Any] = {
        "type": "block_actions",
        "token": "legacy",
        "api_app_id": "A0APP",
        "user": clicker,
        "team": {"id": TEAM},
        "channel": {"id": "C0CHAN"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": "C0CHAN"},
        "message": {"ts": message_ts},
        "trigger_id": "t",
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "b",
                "type": "button",
                "value": value,
                "action_ts": str(time.time()),
            }
        ],
    }
    if state is not None:
        payload["state"] = state
    return payload


class SlackHarness:
    def __init__(
        self,
        slack: FakeSlack,
        llm: FakeLLM,
        redis_url: str,
        prefix: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        redis: dict[str, Any] | None = None,
    ) -> None:
        """``redis``: more of the config's ``redis`` section (``cluster: true``)."""
        self.slack = slack
        self.redis_settings = redis or {}
        self.llm = llm
        self.redis_url = redis_url
        self.prefix = prefix
        self.tmp_path = tmp_path
        self.monkeypatch = monkeypatch
        self.services: Services | None = None
        self.process: SlackProcess | None = None
        self._events_port: EventsPort | None = None
        self._stop = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self.port = 0

    async def start(
        self,
        *,
        with_worker: bool = True,
        environment: dict[str, str] | None = None,
        **config: Any,
    ) -> SlackHarness:
        """Build and start the app; ``environment`` overrides the variables set for it."""
        settings: dict[str, Any] = {
            "redis": {"key_prefix": self.prefix, **self.redis_settings},
            "llm": {"model": "fake-model", "max_retries": 0},
            "queue": {"claim_idle_s": 2, "lock_ttl_s": 3},
        }
        for key, value in config.items():
            if isinstance(value, dict):
                settings[key] = {**settings.get(key, {}), **value}
            else:
                settings[key] = value
        path = self.tmp_path / f"agent-{id(self)}.yaml"
        path.write_text(yaml.safe_dump(settings))
        for name, value in {
            "OPENAI_BASE_URL": self.llm.base_url,
            "OPENAI_API_KEY": "sk-test",
            "REDIS_URL": self.redis_url,
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": self.slack.api_url,
        }.items():
            self.monkeypatch.setenv(name, value)
        self.monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
        for name, value in (environment or {}).items():
            self.monkeypatch.setenv(name, value)
        self.services = build_services(path)
        self.process = process = assemble(self.services, http=True)
        await self.services.start()  # MCP servers, as `slack-agent run` does
        await process.slack.identity.share_with(process.slack.app)
        process.worker.block_ms = 200
        # The events port as `slack-agent run` opens it: the front door, then aiohttp.
        short = ShortAnswers(SECRET, process.slack.messages)
        self._events_port = EventsPort(
            http_app(process.slack.app, self.services.state.client.ping, short), short
        )
        await self._events_port.start("127.0.0.1", 0)
        self.port = self._events_port.port
        if with_worker:  # the worker and its scheduler, as a worker process runs them
            workers = WorkerLoop(process.worker, process.scheduler)
            self._worker = asyncio.create_task(workers.run(self._stop))
        return self

    async def stop(self) -> None:
        self._stop.set()
        if self._worker is not None:
            await asyncio.wait_for(self._worker, 40)
        if self._events_port is not None:
            await self._events_port.stop()
        if self.process is not None:
            await self.process.slack.later.close()
            await self.process.slack.client.aclose()
        if self.services is not None:
            await self.services.aclose()

    @property
    def state(self) -> State:
        assert self.services is not None, "start the app first"
        return self.services.state

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def post(
        self,
        payload: dict[str, Any],
        *,
        retry: int | None = None,
        timestamp: int | None = None,
        secret: str = SECRET,
        signature: str | None = None,
    ) -> tuple[int, float]:
        """Send ``payload`` as Slack would; return the status and the seconds to the ack."""
        body = json.dumps(payload)
        headers = signed_headers(body, timestamp=timestamp, secret=secret, signature=signature)
        if retry is not None:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        started = time.monotonic()
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/slack/events", data=body, headers=headers) as response,
        ):
            await response.read()
            return response.status, time.monotonic() - started

    async def command(
        self,
        text: str,
        user: str = "U0ALICE",
        command: str = "/agent",
        team: str = TEAM,
        channel: str = "C0CHAN",
    ) -> Any:
        """Send a slash command as Slack would (a signed form post); return the JSON reply."""
        body = urlencode(command_fields(text, user, command, team, channel))
        headers = signed_headers(body, "application/x-www-form-urlencoded")
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/slack/events", data=body, headers=headers) as response,
        ):
            assert response.status == 200, await response.text()
            return await response.json()

    async def click(
        self,
        action_id: str,
        value: str,
        user: str,
        message_ts: str,
        state: dict[str, Any] | None = None,
        team: str | None = TEAM,
    ) -> int:
        """Press a button as Slack would: a signed form post with a block_actions payload
        (``team``: the clicker's workspace, None to leave it out)."""
        payload = button_click(
            action_id, value, user, message_ts, self.slack.response_url, state, team
        )
        return await self.click_payload(payload)

    async def click_payload(self, payload: dict[str, Any]) -> int:
        """Send an interaction payload as Slack would (a signed form post)."""
        body = urlencode({"payload": json.dumps(payload)})
        headers = signed_headers(body, "application/x-www-form-urlencoded")
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/slack/events", data=body, headers=headers) as response,
        ):
            return response.status

    def envelope(self, event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
        return event_envelope(event, event_id or f"Ev{next(self._ids):06d}")

    async def answered(
        self, channel: str, thread_ts: str, count: int = 1, within: float = 15
    ) -> list[Message]:
        """Wait until the thread shows ``count`` finished answer messages; return them."""

        def answers() -> list[Message]:
            return [
                m
                for m in self.slack.thread(channel, thread_ts)
                if not m.streaming
                and not is_progress(m)
                and not is_question(m)
                and not is_approval_card(m)
                and not is_sign_in_card(m)
                and not is_waiting_note(m)
            ]

        await until(lambda: len(answers()) >= count and self.idle(), within)
        return answers()

    def idle(self) -> bool:
        assert self.process is not None
        return not self.process.worker.active

    async def after_acks(self) -> None:
        """Wait for the listeners' work after their acks (Home tab, greeting, clicks)."""
        assert self.process is not None
        await self.process.slack.later.settle()


def is_question(message: Message) -> bool:
    """An MCP server's question to the person (tagged "question")."""
    payload = (message.metadata or {}).get("event_payload") or {}
    return payload.get("kind") == "question"


def is_approval_card(message: Message) -> bool:
    """A card asking a person to approve calls (tagged "approval")."""
    payload = (message.metadata or {}).get("event_payload") or {}
    return payload.get("kind") == "approval"


def is_sign_in_card(message: Message) -> bool:
    """A card saying the turn waits for its person to connect an MCP server (tagged
    "signin")."""
    payload = (message.metadata or {}).get("event_payload") or {}
    return payload.get("kind") == "signin"


def is_waiting_note(message: Message) -> bool:
    """The note that the thread waits for a decision on an approval card (tagged
    "waiting")."""
    payload = (message.metadata or {}).get("event_payload") or {}
    return payload.get("kind") == "waiting"


def is_progress(message: Message) -> bool:
    """The Stop button's own message, or a turn's message with no answer in it yet."""
    shown = message.shown
    return shown in ("", "Working on it…") or any(
        element.get("action_id") == "stop_turn"
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
    )


def mention(
    text: str, ts: str, channel: str = "C0CHAN", user: str = "U0ALICE", thread_ts: str | None = None
) -> dict[str, Any]:
    event = channel_message(f"<@{BOT_USER}> {text}", ts, channel, user, thread_ts)
    event["type"] = "app_mention"
    del event["channel_type"]  # app_mention events carry none
    return event


def channel_message(
    text: str,
    ts: str,
    channel: str = "C0CHAN",
    user: str = "U0ALICE",
    thread_ts: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    event = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": ts,
        "channel": channel,
        "channel_type": "channel",
        "event_ts": ts,
        "team": TEAM,
        **extra,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def direct_message(
    text: str,
    ts: str,
    channel: str = "D0ALICE",
    user: str = "U0ALICE",
    thread_ts: str | None = None,
) -> dict[str, Any]:
    event = channel_message(text, ts, channel, user, thread_ts)
    event["channel_type"] = "im"
    return event
