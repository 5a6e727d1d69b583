"""A fake Slack Web API on loopback. The real slack_sdk client talks to it over HTTP.

It records every call, keeps the messages each thread would show (posts, edits, deletes,
streams), and can be told to fail a method: a 429 with Retry-After, or an ``ok: false``
error such as ``message_not_in_streaming_state``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
TEAM = "T0TEAM"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float


@dataclass
class Message:
    channel: str
    ts: str
    thread_ts: str | None
    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    streaming: bool = False
    edits: int = 0

    @property
    def shown(self) -> str:
        """What a person reads: the markdown block if there is one, else the text."""
        for block in self.blocks:
            if block.get("type") == "markdown":
                return str(block.get("text", ""))
        return self.text


@dataclass
class Failure:
    error: str
    status: int = 200
    retry_after: int | None = None
    times: int = 1


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, str], Message] = {}
        self.failures: dict[str, list[Failure]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, list[str]] = {}
        self.latency_s = 0.0
        self._ts = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def fail(
        self,
        method: str,
        error: str,
        *,
        status: int = 200,
        retry_after: int | None = None,
        times: int = 1,
    ) -> None:
        self.failures.setdefault(method, []).append(Failure(error, status, retry_after, times))

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        """The bot's messages in a thread, oldest first."""
        found = [
            m
            for m in self.messages.values()
            if m.channel == channel and (m.thread_ts == thread_ts or m.ts == thread_ts)
        ]
        return sorted(found, key=lambda m: float(m.ts))

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_get("/api/{method}", self._handle)  # users.info and friends use GET
        app.router.add_post("/response/{id}", self._response_url)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def response_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/response/1"

    async def _response_url(self, request: web.Request) -> web.Response:
        """What Bolt's respond() sends to an interaction's response_url."""
        self.calls.append(Call("response_url", await request.json(), time.monotonic()))
        return web.Response(text="ok")

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await _arguments(request)
        self.calls.append(Call(method, args, time.monotonic()))
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        queued = self.failures.get(method)
        if queued:
            failure = queued[0]
            failure.times -= 1
            if failure.times <= 0:
                queued.pop(0)
            headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after else {}
            return web.json_response(
                {"ok": False, "error": failure.error}, status=failure.status, headers=headers
            )
        return web.json_response(self._answer(method, args))

    def _next_ts(self) -> str:
        return f"{1_800_000_000 + next(self._ts)}.000100"

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(args.get("channel") or args.get("channel_id") or "")
        if method == "auth.test":
            return {
                "ok": True,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "team_id": TEAM,
                "team": "Test",
                "user": "agent",
                "url": "https://test.slack.com/",
            }
        if method == "chat.postMessage":
            ts = self._next_ts()
            self.messages[(channel, ts)] = Message(
                channel,
                ts,
                args.get("thread_ts"),
                str(args.get("text") or ""),
                list(args.get("blocks") or []),
            )
            return {"ok": True, "channel": channel, "ts": ts}
        if method == "chat.update":
            message = self.messages.get((channel, str(args.get("ts"))))
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            message.text = str(args.get("text") or "")
            message.blocks = list(args.get("blocks") or [])
            message.streaming = False
            message.edits += 1
            return {"ok": True, "channel": channel, "ts": message.ts}
        if method == "chat.delete":
            if self.messages.pop((channel, str(args.get("ts"))), None) is None:
                return {"ok": False, "error": "message_not_found"}
            return {"ok": True}
        if method == "chat.startStream":
            ts = self._next_ts()
            message = Message(channel, ts, args.get("thread_ts"), "", streaming=True)
            message.text = str(args.get("markdown_text") or "") + _chunk_text(args.get("chunks"))
            self.messages[(channel, ts)] = message
            return {"ok": True, "channel": channel, "ts": ts}
        if method in ("chat.appendStream", "chat.stopStream"):
            message = self.messages.get((channel, str(args.get("ts"))))
            if message is None or not message.streaming:
                return {"ok": False, "error": "message_not_in_streaming_state"}
            message.text += str(args.get("markdown_text") or "") + _chunk_text(args.get("chunks"))
            if method == "chat.stopStream":
                message.streaming = False
            return {"ok": True, "channel": channel, "ts": message.ts}
        if method == "usergroups.users.list":
            group = str(args.get("usergroup"))
            if group not in self.groups:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": self.groups[group]}
        if method == "users.info":
            user = self.users.get(str(args.get("user")))
            if user is None:
                return {"ok": False, "error": "user_not_found"}
            return {"ok": True, "user": user}
        return {"ok": True}


def _chunk_text(chunks: Any) -> str:
    if isinstance(chunks, str):
        chunks = json.loads(chunks)
    return "".join(str(c.get("text", "")) for c in chunks or () if c.get("type") == "markdown_text")


async def _arguments(request: web.Request) -> dict[str, Any]:
    data: dict[str, Any] = dict(request.query)  # some methods send their arguments as params
    if request.content_type == "application/json":
        data.update(await request.json())
    else:
        data.update(await request.post())
    for name in ("blocks", "chunks", "prompts"):
        if isinstance(data.get(name), str):
            data[name] = json.loads(data[name])
    return {k: v for k, v in data.items() if k != "token"}
