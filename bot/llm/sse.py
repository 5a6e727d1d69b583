"""A streamed Chat Completions response read as plain dicts: server-sent events, each one's
data parsed as JSON, until ``[DONE]``.

The openai SDK builds a pydantic object for every chunk; this reads the same bytes into the
dicts the server sent. What the SDK does with a stream is kept: an event whose data is an
object with an ``error`` raises ``openai.APIError`` (its message, else a generic one),
data that is not JSON raises ``ValueError``, anything after ``[DONE]`` is read and dropped
(so the connection can be reused), and a stream that ends without ``[DONE]`` just ends.

A response that arrives faster than it is read is buffered, and the buffered bytes come back
without the read ever waiting: a long answer would then be parsed, and handed on, in one go,
holding the worker's event loop (and every other turn on it) for the whole of it. The
reader lets the loop run others after every ``YIELD_EVERY`` chunks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx2
import openai

DONE = "[DONE]"
STREAM_ERROR = "An error occurred during streaming"
YIELD_EVERY = 32  # chunks read before the loop runs others (a few ms of work at most)


class EventData:
    """Bytes in, the data of each whole event out. An event is lines of ``field: value``
    ended by a blank line (CR, LF or CRLF); its ``data`` lines are joined with newlines;
    comments (``:``) and other fields are skipped; an event without data is none."""

    def __init__(self) -> None:
        self._partial = b""  # the start of a line not yet ended
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        lines = (self._partial + chunk).splitlines(keepends=True)
        self._partial = b""
        if lines and not lines[-1].endswith(b"\n"):
            # Not ended yet, or ended by a CR that may be the first half of a CRLF.
            self._partial = lines.pop()
        return self._events(lines)

    def finish(self) -> list[str]:
        """At the end of the stream: a last line ended by a CR is a line; an unended one is
        not (nor is an event no blank line ended)."""
        ended = [self._partial] if self._partial.endswith(b"\r") else []
        self._partial = b""
        return self._events(ended)

    def _events(self, lines: list[bytes]) -> list[str]:
        events = []
        for line in lines:
            data = self._line(line.rstrip(b"\r\n").decode("utf-8"))
            if data is not None:
                events.append(data)
        return events

    def _line(self, line: str) -> str | None:
        if not line:
            if not self._data:
                return None
            data = "\n".join(self._data)
            self._data = []
            return data
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None


def parsed(data: str, request: httpx2.Request) -> dict[str, Any]:
    """One event's data as the chunk it is; an error the server sent mid-stream raises."""
    chunk = json.loads(data)
    if not isinstance(chunk, dict):
        raise ValueError(f"a streamed chunk that is not a JSON object: {data[:200]!r}")
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else None
        if not message or not isinstance(message, str):
            message = STREAM_ERROR
        raise openai.APIError(message, request=request, body=error)
    return chunk


async def chunks(response: httpx2.Response) -> AsyncGenerator[dict[str, Any], None]:
    """Every chunk of ``response`` (not yet read), in order; the response is closed after."""
    events = EventData()
    done = False
    read = 0
    try:
        async for raw in response.aiter_bytes():
            if done:
                continue  # read to the end: the connection goes back to the pool
            for data in events.feed(raw):
                if data.startswith(DONE):
                    done = True
                    break
                yield parsed(data, response.request)
                read += 1
                if read % YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # let the loop's other tasks run
        if not done:
            for data in events.finish():
                if data.startswith(DONE):
                    break
                yield parsed(data, response.request)
    finally:
        await response.aclose()
