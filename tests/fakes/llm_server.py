"""A fake OpenAI-compatible Chat Completions server on loopback, scripted per test.

The real ``openai`` client talks to it over HTTP. Each request takes the next scripted
reply (or calls a function of the request); every request body is recorded.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Request = dict[str, Any]

# The API key of the request being answered, for a scripted function that tells callers apart.
caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="")


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, args)
    status: int = 200
    delay_s: float = 0.0
    text_piece: int = 4  # characters of text per streamed chunk
    args_piece: int = 5  # characters of arguments per streamed chunk
    usage: tuple[int, int] | None = (20, 10)
    drop_after_chunks: int | None = None  # close the connection mid-stream
    index_style: str = "normal"  # "normal", "missing" (no index), "zero" (all index 0)
    finish_reason: str | None = None
    chunk_delay_s: float = 0.0  # pause between streamed chunks, like a real model
    hold: asyncio.Event | None = None  # answer only once it is set (the request has arrived)


def text(content: str, **kwargs: Any) -> Reply:
    return Reply(text=content, **kwargs)


def calls(
    *specs: tuple[str, Any] | tuple[str, Any, str], content: str = "", **kwargs: Any
) -> Reply:
    """Tool calls: each spec is (name, arguments) or (name, arguments, id). Arguments that are
    not a string are JSON-encoded."""
    made = []
    for number, spec in enumerate(specs):
        name, arguments = spec[0], spec[1]
        call_id = spec[2] if len(spec) > 2 else f"call_{name}_{number}"
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        made.append((call_id, name, raw))
    return Reply(text=content, tool_calls=made, **kwargs)


def error(status: int, **kwargs: Any) -> Reply:
    return Reply(status=status, **kwargs)


Script = Reply | Callable[[Request], Reply]


class FakeLLM:
    def __init__(self) -> None:
        self.script: list[Script] = []
        self.otherwise: Script | None = None  # answers every request once the script is spent
        self.requests: list[Request] = []
        self.arrived_at: list[float] = []  # time.monotonic() of each request, in order
        self.model = "fake-model"
        self.models: list[str] | None = ["fake-model"]  # GET /v1/models; None: no such route
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._arrived = asyncio.Condition()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, *replies: Script) -> None:
        self.script.extend(replies)

    async def wait_for_requests(self, count: int) -> None:
        """Return once ``count`` requests have arrived (at most 30 s: a loaded machine may
        take 10 s to start a worker's first turn)."""
        async with asyncio.timeout(30), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)

    def offered_tools(self, request_index: int = -1) -> list[str]:
        request = self.requests[request_index]
        return [t["function"]["name"] for t in request.get("tools") or ()]

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        if self.models is None:
            return web.json_response({"error": {"message": "not found"}}, status=404)
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        async with self._arrived:
            self.requests.append(body)
            self.arrived_at.append(time.monotonic())
            self._arrived.notify_all()
        if not self.script and self.otherwise is not None:
            self.script.append(self.otherwise)
        if not self.script:
            return web.json_response(
                {"error": {"message": "no scripted reply left", "type": "server_error"}},
                status=500,
                headers={"retry-after-ms": "1", "x-should-retry": "false"},
            )
        step = self.script.pop(0)
        caller.set(request.headers.get("Authorization", "").removeprefix("Bearer "))
        reply = step(body) if callable(step) else step
        if reply.hold is not None:
            await reply.hold.wait()
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return web.json_response(
                {"error": {"message": f"scripted {reply.status}", "type": "fake_error"}},
                status=reply.status,
                headers={"retry-after-ms": "1"},
            )
        if body.get("stream"):
            return await self._stream(request, body, reply)
        return web.json_response(self._whole(reply))

    def _whole(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in reply.tool_calls
            ]
        result: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        }
        if reply.usage:
            result["usage"] = _usage(reply.usage)
        return result

    async def _stream(
        self, request: web.Request, body: Request, reply: Reply
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunks = list(
            self._chunks(reply, bool((body.get("stream_options") or {}).get("include_usage")))
        )
        for number, chunk in enumerate(chunks):
            if reply.drop_after_chunks is not None and number >= reply.drop_after_chunks:
                assert request.transport is not None
                request.transport.close()
                return response
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    def _chunks(self, reply: Reply, include_usage: bool) -> list[dict[str, Any]]:
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        for start in range(0, len(reply.text), reply.text_piece):
            deltas.append({"content": reply.text[start : start + reply.text_piece]})
        for position, (call_id, name, arguments) in enumerate(reply.tool_calls):
            index = {"normal": position, "zero": 0}.get(reply.index_style)
            first: dict[str, Any] = {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            if index is not None:
                first["index"] = index
            deltas.append({"tool_calls": [first]})
            for start in range(0, len(arguments), reply.args_piece):
                piece: dict[str, Any] = {
                    "function": {"arguments": arguments[start : start + reply.args_piece]}
                }
                if index is not None:
                    piece["index"] = index
                deltas.append({"tool_calls": [piece]})
        chunks = [_chunk(self.model, delta, None) for delta in deltas]
        chunks.append(_chunk(self.model, {}, _finish(reply)))
        if include_usage and reply.usage:
            chunks.append(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": self.model,
                    "choices": [],
                    "usage": _usage(reply.usage),
                }
            )
        return chunks


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    return {
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "total_tokens": usage[0] + usage[1],
    }


def _chunk(model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def tool_results(request: Request) -> dict[str, str]:
    """The tool results in a request, by call id."""
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m.get("role") == "tool"}
