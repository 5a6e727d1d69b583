"""A fake Slack Web API on loopback. The real slack_sdk client talks to it over HTTP.

It records every call (with a monotonic time and the HTTP status it got), keeps the messages
each thread would show (posts, edits, deletes, streams, with their metadata), and can be told
to fail a method: a 429 with Retry-After, an ``ok: false`` error such as
``message_not_in_streaming_state``, or an outage of several methods for some seconds.

What people wrote is registered with :meth:`FakeSlack.add_user_message`; it is kept apart
from the bot's messages (``messages``) and shows up, with them, in ``conversations.replies``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
TEAM = "T0TEAM"


REPLIES_LIMIT = 1000  # the default and the most conversations.replies returns at once
OUTAGE_ERROR = "service_unavailable"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float  # time.monotonic() when the call arrived
    status: int = 200  # the HTTP status it was answered with
    token: str = ""  # the bearer token it came with
    peer: str = ""  # the client's address and port: one per connection


@dataclass
class Message:
    channel: str
    ts: str
    thread_ts: str | None
    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    streaming: bool = False
    edits: int = 0
    metadata: dict[str, Any] | None = None  # {"event_type": ..., "event_payload": {...}}
    user: str = BOT_USER
    bot_id: str | None = BOT_ID  # None for what a person wrote
    updated_at: float = 0.0  # time.monotonic() of the last post, edit or stream write
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # task cards, by id
    task_display: str = ""  # how a stream shows its task cards (timeline, plan)
    stopped_by_user: bool = False  # the person pressed stop on this stream
    extra: dict[str, Any] = field(default_factory=dict)  # more fields listed (files, ...)

    @property
    def open_tasks(self) -> list[dict[str, Any]]:
        """Task cards still shown as running."""
        return [t for t in self.tasks.values() if t.get("status") in ("pending", "in_progress")]

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


class Refused(Exception):
    """An argument Slack would refuse; ``error`` is Slack's error code."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass(frozen=True)
class Outage:
    """Every call to ``methods`` between ``starts`` and ``ends`` (monotonic) fails."""

    methods: frozenset[str]
    starts: float
    ends: float
    status: int

    def covers(self, method: str, at: float) -> bool:
        return method in self.methods and self.starts <= at < self.ends


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, str], Message] = {}
        self.failures: dict[str, list[Failure]] = {}
        self.outages: list[Outage] = []
        self.agent_sessions = True  # False: the workspace does not offer agent sessions
        self.sessions: dict[tuple[str, str], list[str]] = {}  # (channel, thread) -> statuses
        self.user_stop_error = ""  # what a write to a stream the person stopped gets
        self.user_messages: dict[tuple[str, str], Message] = {}  # what people wrote
        # users.info: each answered with team_id TEAM unless its entry names another (or
        # sets it to None: a user object without one)
        self.users: dict[str, dict[str, Any]] = {}
        self.enterprise = ""  # the Enterprise Grid organisation auth.test names ("": none)
        self.groups: dict[str, list[str]] = {}
        self.channels: dict[str, dict[str, Any]] = {}  # conversations.info
        self.members: dict[str, list[str]] = {}  # conversations.members, by channel
        self.files: dict[str, dict[str, Any]] = {}  # files.info, by id
        self.file_bytes: dict[str, tuple[bytes, str]] = {}  # id -> (content, content type)
        self.latency_s = 0.0
        # Slow to answer these methods: the call takes effect at once, its answer comes late
        self.method_latency_s: dict[str, float] = {}
        self.methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}  # more methods
        self.refused_tokens: dict[str, str] = {}  # token -> the error every call with it gets
        self.granted_scopes: set[str] | None = None  # sent as x-oauth-scopes when set
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

    def outage(self, methods: Iterable[str], seconds: float, status: int = 503) -> Outage:
        """From now on, for ``seconds``, every call to ``methods`` fails with ``status`` and
        ``{"ok": false, "error": "service_unavailable"}``."""
        now = time.monotonic()
        outage = Outage(frozenset(methods), now, now + seconds, status)
        self.outages.append(outage)
        return outage

    def outage_over(self) -> bool:
        """True once no outage is under way (for ``tests.waiting.until``)."""
        now = time.monotonic()
        return all(outage.ends <= now for outage in self.outages)

    async def wait_outage_over(self) -> float:
        """Return once every outage declared so far has ended; the monotonic time the last
        one ended (now, if there was none)."""
        ends = max((o.ends for o in self.outages), default=time.monotonic())
        await asyncio.sleep(max(ends - time.monotonic(), 0.0))
        return ends

    def new_ts(self) -> str:
        """A fresh message ts from the same clock as the bot's messages."""
        return self._next_ts()

    def add_user_message(
        self,
        channel: str,
        ts: str,
        user: str,
        text: str,
        thread_ts: str | None = None,
        **extra: Any,
    ) -> Message:
        """Register what a person wrote, so conversations.replies shows it (with ``extra``
        fields such as ``files``)."""
        message = Message(
            channel,
            ts,
            thread_ts,
            text,
            user=user,
            bot_id=None,
            updated_at=time.monotonic(),
            extra=dict(extra),
        )
        self.user_messages[(channel, ts)] = message
        return message

    def add_file(
        self, file_id: str, name: str, content: bytes, mimetype: str, **fields: Any
    ) -> dict[str, Any]:
        """A file Slack keeps: its object (for events and files.info), its bytes served at
        its ``url_private`` to a request with the bot token."""
        url = f"http://127.0.0.1:{self.port}/files/{file_id}/{name}"
        self.files[file_id] = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "size": len(content),
            "url_private": url,
            "url_private_download": url + "?download=1",
            **fields,
        }
        self.file_bytes[file_id] = (content, mimetype)
        return dict(self.files[file_id])

    def _set_session(self, channel: str, thread_ts: str, status: str) -> None:
        self.sessions.setdefault((channel, thread_ts), []).append(status)

    def session(self, channel: str, thread_ts: str) -> str:
        """The agent session's status now ("" when there is none)."""
        statuses = self.sessions.get((channel, thread_ts)) or [""]
        return statuses[-1]

    def stop_stream_as_user(self, channel: str, ts: str) -> None:
        """The person pressed Slack's stop while the message streamed."""
        message = self.messages[(channel, ts)]
        message.streaming, message.stopped_by_user = False, True

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

    def conversation(self, channel: str, thread_ts: str) -> list[Message]:
        """Everything a thread shows, people's messages and the bot's, oldest first."""
        found = [
            m
            for m in (*self.user_messages.values(), *self.messages.values())
            if m.channel == channel and (m.thread_ts == thread_ts or m.ts == thread_ts)
        ]
        return sorted(found, key=lambda m: float(m.ts))

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_get("/api/{method}", self._handle)  # users.info and friends use GET
        app.router.add_post("/response/{id}", self._response_url)
        app.router.add_get("/files/{id}/{name}", self._file)
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

    async def _file(self, request: web.Request) -> web.Response:
        """A file's bytes, as files.slack.com serves them: only with the bot token (else
        Slack's sign-in page)."""
        file_id = request.match_info["id"]
        authorization = request.headers.get("Authorization", "")
        call = Call("file_download", {"file": file_id}, time.monotonic())
        self.calls.append(call)
        for outage in self.outages:
            if outage.covers("file_download", call.at):
                call.status = outage.status
                return web.Response(status=outage.status)
        if file_id not in self.file_bytes:
            call.status = 404
            return web.Response(status=404)
        if authorization != "Bearer xoxb-test":
            return web.Response(text="<html>Sign in</html>", content_type="text/html")
        content, mimetype = self.file_bytes[file_id]
        return web.Response(body=content, content_type=mimetype)

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await _arguments(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        peer = request.transport.get_extra_info("peername") if request.transport else None
        call = Call(
            method, args, time.monotonic(), token=token, peer=":".join(map(str, peer or ()))
        )
        self.calls.append(call)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        for outage in self.outages:
            if outage.covers(method, call.at):
                call.status = outage.status
                return web.json_response({"ok": False, "error": OUTAGE_ERROR}, status=outage.status)
        queued = self.failures.get(method)
        if queued:
            failure = queued[0]
            failure.times -= 1
            if failure.times <= 0:
                queued.pop(0)
            headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after else {}
            call.status = failure.status
            return web.json_response(
                {"ok": False, "error": failure.error}, status=failure.status, headers=headers
            )
        if token in self.refused_tokens:
            return web.json_response({"ok": False, "error": self.refused_tokens[token]})
        headers = {}
        if self.granted_scopes is not None:
            headers["x-oauth-scopes"] = ",".join(sorted(self.granted_scopes))
        try:
            answer = self._answer(method, args)
        except Refused as refused:
            answer = {"ok": False, "error": refused.error}
        if method in self.method_latency_s:
            await asyncio.sleep(self.method_latency_s[method])
        return web.json_response(answer, headers=headers)

    def _next_ts(self) -> str:
        return f"{1_800_000_000 + next(self._ts)}.000100"

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(args.get("channel") or args.get("channel_id") or "")
        if method in self.methods:
            return self.methods[method](args)
        if method == "auth.test":
            return {
                "ok": True,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "team_id": TEAM,
                "team": "Test",
                "user": "agent",
                "url": "https://test.slack.com/",
                **({"enterprise_id": self.enterprise} if self.enterprise else {}),
            }
        if method == "chat.postMessage":
            ts = self._next_ts()
            self.messages[(channel, ts)] = Message(
                channel,
                ts,
                args.get("thread_ts"),
                str(args.get("text") or ""),
                list(args.get("blocks") or []),
                metadata=_metadata(args.get("metadata")),
                updated_at=time.monotonic(),
            )
            return {"ok": True, "channel": channel, "ts": ts}
        if method == "chat.update":
            message = self.messages.get((channel, str(args.get("ts"))))
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            message.text = str(args.get("text") or "")
            message.blocks = list(args.get("blocks") or [])
            # The message shows its new blocks: a stream's task cards go with the old ones.
            message.tasks = _task_cards(message.blocks)
            message.streaming = False
            message.edits += 1
            message.updated_at = time.monotonic()
            if "metadata" in args:
                message.metadata = _metadata(args.get("metadata"))
            return {"ok": True, "channel": channel, "ts": message.ts}
        if method == "chat.delete":
            if self.messages.pop((channel, str(args.get("ts"))), None) is None:
                return {"ok": False, "error": "message_not_found"}
            return {"ok": True}
        if method == "chat.startStream":
            ts = self._next_ts()
            message = Message(
                channel,
                ts,
                args.get("thread_ts"),
                "",
                streaming=True,
                metadata=_metadata(args.get("metadata")),
                updated_at=time.monotonic(),
            )
            message.text = str(args.get("markdown_text") or "") + _chunk_text(args.get("chunks"))
            message.task_display = str(args.get("task_display_mode") or "")
            _take_tasks(message, args.get("chunks"))
            self.messages[(channel, ts)] = message
            return {"ok": True, "channel": channel, "ts": ts}
        if method in ("chat.appendStream", "chat.stopStream"):
            message = self.messages.get((channel, str(args.get("ts"))))
            if message is None or not message.streaming:
                error = self.user_stop_error if message and message.stopped_by_user else None
                return {"ok": False, "error": error or "message_not_in_streaming_state"}
            message.text += str(args.get("markdown_text") or "") + _chunk_text(args.get("chunks"))
            _take_tasks(message, args.get("chunks"))
            message.updated_at = time.monotonic()
            if method == "chat.stopStream":
                message.streaming = False
                if "metadata" in args:
                    message.metadata = _metadata(args.get("metadata"))
                if args.get("blocks"):
                    message.blocks = list(args["blocks"])
                if args.get("session_status"):
                    thread = message.thread_ts or message.ts
                    self._set_session(channel, thread, str(args["session_status"]))
            return {"ok": True, "channel": channel, "ts": message.ts}
        if method in ("views.open", "views.update"):
            view = args.get("view")
            view = json.loads(view) if isinstance(view, str) else dict(view or {})
            view_id = str(args.get("view_id") or f"V{next(self._ts):08d}")
            return {"ok": True, "view": {**view, "id": view_id}}
        if method == "agents.sessions.setStatus":
            if not self.agent_sessions:
                return {"ok": False, "error": "not_allowed_token_type"}
            self._set_session(channel, str(args.get("thread_ts") or ""), str(args["status"]))
            return {"ok": True, "status": args["status"]}
        if method == "conversations.replies":
            return self._replies(channel, args)
        if method == "conversations.history":
            return self._history(channel, args)
        if method == "usergroups.users.list":
            group = str(args.get("usergroup"))
            if group not in self.groups:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": self.groups[group]}
        if method == "conversations.info":
            found = self.channels.get(channel)
            if found is None:
                return {"ok": False, "error": "channel_not_found"}
            return {"ok": True, "channel": found}
        if method == "conversations.members":
            return self._members(channel, args)
        if method == "files.info":
            file = self.files.get(str(args.get("file")))
            if file is None:
                return {"ok": False, "error": "file_not_found"}
            return {"ok": True, "file": file}
        if method == "users.info":
            user = self.users.get(str(args.get("user")))
            if user is None:
                return {"ok": False, "error": "user_not_found"}
            shown = {"team_id": TEAM, **user}
            return {"ok": True, "user": {k: v for k, v in shown.items() if v is not None}}
        return {"ok": True}

    def _members(self, channel: str, args: dict[str, Any]) -> dict[str, Any]:
        """A channel's members as conversations.members pages them (``limit`` a page, the
        cursor the position of the next one)."""
        if channel not in self.members:
            return {"ok": False, "error": "channel_not_found"}
        members = self.members[channel]
        limit = max(1, min(int(args.get("limit") or 100), 1000))
        start = int(args.get("cursor") or 0)
        end = start + limit
        more = str(end) if end < len(members) else ""
        page = members[start:end]
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": more}}

    def _replies(self, channel: str, args: dict[str, Any]) -> dict[str, Any]:
        """A thread, oldest first, as conversations.replies pages it.

        ``ts`` may be the root or any reply. The root always comes first on the first page;
        ``oldest`` / ``latest`` (exclusive unless ``inclusive``) filter the replies.
        """
        ts = str(args.get("ts") or "")
        everything = {**self.user_messages, **self.messages}
        named = everything.get((channel, ts))
        if named is None:
            return {"ok": False, "error": "thread_not_found"}
        root_ts = named.thread_ts or named.ts
        thread = self.conversation(channel, root_ts)
        root = [m for m in thread if m.ts == root_ts]
        replies = [m for m in thread if m.ts != root_ts and _in_range(m.ts, args)]
        listed = root + replies
        limit = max(1, min(int(args.get("limit") or REPLIES_LIMIT), REPLIES_LIMIT))
        start = _cursor_position(listed, args.get("cursor"))
        page = listed[start : start + limit]
        with_metadata = _truthy(args.get("include_all_metadata"))
        answer: dict[str, Any] = {
            "ok": True,
            "messages": [_as_listed(m, with_metadata) for m in page],
            "has_more": start + limit < len(listed),
        }
        if answer["has_more"]:
            answer["response_metadata"] = {"next_cursor": _cursor(listed[start + limit].ts)}
        else:
            answer["response_metadata"] = {"next_cursor": ""}
        return answer

    def top_level(self, channel: str) -> list[Message]:
        """The bot's messages at the top of a channel (not in a thread), oldest first."""
        found = [
            m
            for m in self.messages.values()
            if m.channel == channel and m.thread_ts in (None, m.ts)
        ]
        return sorted(found, key=lambda m: float(m.ts))

    def _history(self, channel: str, args: dict[str, Any]) -> dict[str, Any]:
        """A channel's top-level messages, people's and the bot's, newest first, as
        conversations.history gives its first page (``oldest`` / ``latest`` exclusive unless
        ``inclusive``, ``limit``); no cursor."""
        everything = (*self.user_messages.values(), *self.messages.values())
        found = [
            m
            for m in everything
            if m.channel == channel and m.thread_ts in (None, m.ts) and _in_range(m.ts, args)
        ]
        found.sort(key=lambda m: float(m.ts), reverse=True)
        limit = max(1, min(int(args.get("limit") or 100), REPLIES_LIMIT))
        with_metadata = _truthy(args.get("include_all_metadata"))
        return {
            "ok": True,
            "messages": [_as_listed(m, with_metadata) for m in found[:limit]],
            "has_more": len(found) > limit,
        }


def _as_listed(message: Message, with_metadata: bool) -> dict[str, Any]:
    listed: dict[str, Any] = {
        "type": "message",
        "ts": message.ts,
        "thread_ts": message.thread_ts or message.ts,
        "text": message.text,
        "user": message.user,
    }
    if message.bot_id is not None:
        listed["bot_id"] = message.bot_id
    if message.blocks:
        listed["blocks"] = message.blocks
    if with_metadata and message.metadata is not None:
        listed["metadata"] = message.metadata
    listed.update(message.extra)
    return listed


def _cursor(ts: str) -> str:
    return base64.b64encode(f"next_ts:{ts}".encode()).decode()


def _cursor_position(listed: list[Message], cursor: Any) -> int:
    """Where the page named by ``cursor`` starts (0 without one)."""
    if not cursor:
        return 0
    try:
        decoded = base64.b64decode(str(cursor), validate=True).decode()
        after = float(decoded.removeprefix("next_ts:"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise Refused("invalid_cursor") from exc
    if not decoded.startswith("next_ts:"):
        raise Refused("invalid_cursor")
    for position, message in enumerate(listed):
        if float(message.ts) >= after:
            return position
    return len(listed)


def _in_range(ts: str, args: dict[str, Any]) -> bool:
    inclusive = _truthy(args.get("inclusive"))
    value = float(ts)
    if args.get("oldest"):
        oldest = _ts(args["oldest"], "invalid_ts_oldest")
        if value < oldest or (value == oldest and not inclusive):
            return False
    if args.get("latest"):
        latest = _ts(args["latest"], "invalid_ts_latest")
        if value > latest or (value == latest and not inclusive):
            return False
    return True


def _ts(value: Any, error: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise Refused(error) from exc


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "false", "no")
    return bool(value)


def _metadata(value: Any) -> dict[str, Any] | None:
    """Message metadata as given (a dict, or the JSON string form posts carry)."""
    if value is None or value == "":
        return None
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except ValueError as exc:
        raise Refused("invalid_metadata_format") from exc
    if not isinstance(data, dict) or "event_type" not in data:
        raise Refused("invalid_metadata_format")
    return dict(data)


def _take_tasks(message: Message, chunks: Any) -> None:
    if isinstance(chunks, str):
        chunks = json.loads(chunks)
    for chunk in chunks or ():
        if chunk.get("type") == "task_update":
            message.tasks[str(chunk["id"])] = dict(chunk)


def _task_cards(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The task cards among ``blocks`` (in plan blocks too), by id, as chunks name them."""
    cards = [b for b in blocks if b.get("type") == "task_card"]
    cards += [t for b in blocks if b.get("type") == "plan" for t in b.get("tasks") or ()]
    return {str(card["task_id"]): {**card, "id": card["task_id"]} for card in cards}


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
