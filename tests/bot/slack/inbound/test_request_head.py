"""The front door reads only plain request heads; anything else is aiohttp's (pure)."""

from __future__ import annotations

import pytest

from bot.slack.inbound.request_head import Answers, head_end, media_type, read_head

PLAIN = (
    b"POST /slack/events HTTP/1.1\r\n"
    b"Host: bot.example.com\r\n"
    b"Content-Type: application/json; charset=utf-8\r\n"
    b"Content-Length: 12\r\n"
    b"X-Slack-Signature: v0=abc\r\n"
    b"X-Slack-Request-Timestamp:1700000000"
)


def test_a_plain_head_is_read_with_lower_case_names() -> None:
    head = read_head(PLAIN)
    assert head is not None
    assert (head.method, head.target, head.version) == ("POST", "/slack/events", "HTTP/1.1")
    assert head.body_length == 12
    assert head.headers["x-slack-signature"] == "v0=abc"
    assert head.headers["x-slack-request-timestamp"] == "1700000000"
    assert media_type(head.headers["content-type"]) == "application/json"
    assert head.keep_alive


def test_a_repeated_header_keeps_every_value() -> None:
    head = read_head(PLAIN + b"\r\nX-Slack-Signature: v0=def")
    assert head is not None
    assert head.headers["x-slack-signature"] == "v0=abc, v0=def"  # no signature matches


def test_where_a_head_ends() -> None:
    request = PLAIN + b"\r\n\r\n" + b'{"a": "b\r\n"}'
    assert head_end(request) == len(PLAIN)
    assert head_end(PLAIN + b"\r\n") == -1


@pytest.mark.parametrize(
    ("extra", "version", "keep_alive"),
    [
        (b"", b"HTTP/1.1", True),
        (b"\r\nConnection: close", b"HTTP/1.1", False),
        (b"\r\nConnection: TE, Close", b"HTTP/1.1", False),
        (b"\r\nConnection: keep-alive", b"HTTP/1.1", True),
        (b"", b"HTTP/1.0", False),
        (b"\r\nConnection: keep-alive", b"HTTP/1.0", False),
    ],
)
def test_keep_alive(extra: bytes, version: bytes, keep_alive: bool) -> None:
    head = read_head(PLAIN.replace(b"HTTP/1.1", version) + extra)
    assert head is not None
    assert head.keep_alive is keep_alive


@pytest.mark.parametrize(
    ("why", "head"),
    [
        ("a bare LF ends a line", PLAIN.replace(b"\r\nHost", b"\nHost")),
        ("a bare CR in a value", PLAIN.replace(b"v0=abc", b"v0=a\rbc")),
        ("a folded header line", PLAIN + b"\r\n  continued"),
        ("a space before the colon", PLAIN.replace(b"Host:", b"Host :")),
        ("a line without a colon", PLAIN + b"\r\nNo colon here"),
        ("a control character", PLAIN.replace(b"v0=abc", b"v0=a\x00bc")),
        ("chunked", PLAIN + b"\r\nTransfer-Encoding: chunked"),
        ("both lengths (smuggling)", PLAIN + b"\r\ntransfer-encoding: identity"),
        ("two lengths", PLAIN + b"\r\nContent-Length: 12"),
        ("two different lengths", PLAIN + b"\r\nContent-Length: 13"),
        ("a length with a sign", PLAIN.replace(b"Length: 12", b"Length: +12")),
        ("a length not in ASCII digits", PLAIN.replace(b"Length: 12", "Length: ١٢".encode())),
        ("no length", PLAIN.replace(b"Content-Length: 12\r\n", b"")),
        ("an Expect", PLAIN + b"\r\nExpect: 100-continue"),
        ("an Upgrade", PLAIN + b"\r\nUpgrade: websocket"),
        ("HTTP/2", PLAIN.replace(b"HTTP/1.1", b"HTTP/2.0")),
        ("a request line of four parts", PLAIN.replace(b"POST ", b"POST  ")),
    ],
)
def test_anything_but_a_plain_head_is_not_read(why: str, head: bytes) -> None:
    assert read_head(head) is None, why


def test_an_answer_as_aiohttp_would_write_it() -> None:
    answer = Answers().render(503, "state store unavailable; retry later", keep_alive=False)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable"
    fields = dict(line.split(": ", 1) for line in lines[1:])
    assert fields["Content-Type"] == "text/plain; charset=utf-8"
    assert fields["Content-Length"] == str(len(body)) == "36"
    assert fields["Connection"] == "close"
    assert fields["Date"].endswith(" GMT")
    assert body == b"state store unavailable; retry later"
    assert b"Connection: keep-alive" in Answers().render(200, "", keep_alive=True)
