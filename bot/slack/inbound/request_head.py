"""The head of an HTTP/1.x request, read as far as the events port's front door needs it
(bot/slack/inbound/front_door.py), and the bytes of its answers (pure).

This is not a general HTTP parser. It reads a plain request (a request line, header lines
``name: value`` ended by CRLF, a body of Content-Length bytes) and says None for anything
else: a bare LF or CR, a folded or malformed header line, a control character, a
Transfer-Encoding, a missing, repeated or non-numeric Content-Length, an Expect or an
Upgrade. The front door then hands the connection to aiohttp, whose parser answers such a
request as it always did (400, 413, 417 ...), so no request is read two ways.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus

# The request line the front door serves; every other request is aiohttp's.
EVENTS_REQUEST_LINE = b"POST /slack/events HTTP/1."

MAX_HEAD = 16 * 1024  # a head not complete within this many bytes is aiohttp's to refuse
MAX_BODY = 1024**2  # aiohttp's own limit for a body it reads (client_max_size): 413 there

# A header name is an RFC 9110 token; a value holds no control character but tab.
_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_HANDED_ON = frozenset({"transfer-encoding", "expect", "upgrade"})


@dataclass(frozen=True, slots=True)
class Head:
    """A request's method, target, headers (names in lower case) and body length."""

    method: str
    target: str
    version: str
    headers: dict[str, str]
    body_length: int

    @property
    def keep_alive(self) -> bool:
        """Whether the connection stays open after the answer (HTTP/1.1 unless it says
        ``Connection: close``; HTTP/1.0 never, here)."""
        if self.version != "HTTP/1.1":
            return False
        tokens = self.headers.get("connection", "").lower().split(",")
        return "close" not in (token.strip() for token in tokens)


def media_type(content_type: str) -> str:
    """A Content-Type's media type, in lower case, without its parameters."""
    return content_type.partition(";")[0].strip().lower()


def head_end(buffer: bytes | bytearray) -> int:
    """Where the head in ``buffer`` ends (the index of its blank line's CRLF CRLF), or -1
    while it is incomplete."""
    return buffer.find(b"\r\n\r\n")


def read_head(head: bytes) -> Head | None:
    """The :class:`Head` of ``head`` (a request's bytes up to, not including, the CRLF CRLF
    that ends it), or None when it is not a plain request this module reads (above)."""
    bare = head.replace(b"\r\n", b"")
    if b"\n" in bare or b"\r" in bare:
        return None  # a bare LF or CR: aiohttp decides what it means
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
        return None
    headers: dict[str, str] = {}
    lengths = 0
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _NAME.fullmatch(name) or _BAD_VALUE.search(value):
            return None
        key = name.decode("ascii").lower()
        text = value.strip(b" \t").decode("latin-1")
        if key in _HANDED_ON:
            return None
        if key == "content-length":
            lengths += 1
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    length = headers.get("content-length", "")
    if lengths != 1 or not length.isdigit() or not length.isascii():
        return None
    return Head(
        method=parts[0].decode("ascii", "replace"),
        target=parts[1].decode("ascii", "replace"),
        version=parts[2].decode("ascii"),
        headers=headers,
        body_length=int(length),
    )


class Answers:
    """The bytes of the front door's answers: a status line, the headers aiohttp would send
    (with a Date made at most once a second), and the body."""

    def __init__(self) -> None:
        self._second = -1
        self._date = ""

    def date(self) -> str:
        now = int(time.time())
        if now != self._second:
            self._second, self._date = now, formatdate(now, usegmt=True)
        return self._date

    def render(
        self, status: int, body: str, *, keep_alive: bool, content_type: str = "text/plain"
    ) -> bytes:
        data = body.encode("utf-8")
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        return (
            f"HTTP/1.1 {status} {reason}\r\n"
            f"Content-Type: {content_type}; charset=utf-8\r\n"
            f"Content-Length: {len(data)}\r\n"
            f"Date: {self.date()}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
            "\r\n"
        ).encode("latin-1") + data
