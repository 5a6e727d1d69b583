"""The events port's front door: the short answers without aiohttp, in order, with
keep-alive; every other request, and every request it does not read, answered by aiohttp
on the same connection, as before. On asyncio's loop and uvloop's (conftest.py)."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import AsyncIterator, Mapping

import pytest
from aiohttp import web
from slack_bolt.response import BoltResponse

from bot.process.listen import EventsPort
from bot.slack.inbound.front_door import MAX_CONNECTIONS, FrontDoor, connection_cap
from tests.waiting import until


class ShortWay:
    """A stand-in for the short answers (bot/slack/inbound/http.py): bodies starting with
    ``short`` get 200 "short", ``boom`` raises, ``slow`` waits for :attr:`go`; everything
    else is aiohttp's."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[Mapping[str, str]] = []
        self.go = asyncio.Event()
        self.started = asyncio.Event()
        self.finished = asyncio.Event()

    async def __call__(self, raw: bytes, headers: Mapping[str, str]) -> BoltResponse | None:
        self.bodies.append(raw)
        self.headers.append(headers)
        if raw.startswith(b"boom"):
            raise RuntimeError("boom")
        if raw.startswith(b"slow"):
            self.started.set()
            await self.go.wait()
            self.finished.set()
        if raw.startswith((b"short", b"slow")):
            return BoltResponse(status=200, body="short " + raw.decode())
        return None


class Port:
    def __init__(self, events_port: EventsPort, short: ShortWay, seen: list[bytes]) -> None:
        self.events_port = events_port
        self.short = short
        self.seen = seen  # bodies aiohttp's POST /slack/events handler read

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.events_port.port)


@pytest.fixture
async def port() -> AsyncIterator[Port]:
    seen: list[bytes] = []

    async def events(request: web.Request) -> web.Response:
        body = await request.read()
        seen.append(body)
        return web.Response(text="aiohttp " + body.decode())

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/slack/events", events)
    app.router.add_get("/healthz", healthz)
    short = ShortWay()
    events_port = EventsPort(app, short)
    await events_port.start("127.0.0.1", 0)
    yield Port(events_port, short, seen)
    await events_port.stop()


def post(body: bytes, *extra: str, path: str = "/slack/events", version: str = "1.1") -> bytes:
    head = [f"POST {path} HTTP/{version}", "Host: bot", f"Content-Length: {len(body)}"]
    head += ["X-Slack-Signature: v0=abc", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def capped(port: Port, max_connections: int) -> FrontDoor:
    """The port's front door, holding at most ``max_connections``."""
    door = port.events_port.door
    assert door is not None
    door.max_connections = max_connections
    return door


async def answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], str]:
    """One answer: its status, headers (names in lower case) and body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    lines = head.decode("latin-1").split("\r\n")[:-2]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 5)
    return int(lines[0].split()[1]), headers, body.decode()


async def closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closes the connection (EOF) within 5 s."""
    return await asyncio.wait_for(reader.read(), 5) == b""


async def test_a_short_answer_is_given_without_aiohttp(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(post(b"short one"))
    status, headers, body = await answer(reader)
    assert (status, body) == (200, "short short one")
    assert headers["connection"] == "keep-alive"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert port.short.bodies == [b"short one"]
    assert port.short.headers[0]["x-slack-signature"] == "v0=abc"
    assert port.seen == []
    writer.close()


async def test_both_event_loops_are_tried(request: pytest.FixtureRequest) -> None:
    kind = type(asyncio.get_running_loop()).__module__.split(".")[0]
    assert f"[{kind}]" in request.node.name


async def test_requests_on_one_connection_are_answered_in_order(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(post(b"short 1"))
    assert (await answer(reader))[2] == "short short 1"
    # pipelined: three requests in one write
    writer.write(post(b"short 2") + post(b"short 3") + post(b"short 4"))
    assert [(await answer(reader))[2] for _ in range(3)] == [
        "short short 2",
        "short short 3",
        "short short 4",
    ]
    writer.close()


async def test_a_request_trickled_byte_by_byte_is_answered(port: Port) -> None:
    reader, writer = await port.connect()
    for byte in post(b"short trickled"):
        writer.write(bytes([byte]))
        await writer.drain()
    assert (await answer(reader))[2] == "short short trickled"
    writer.close()


async def test_a_request_the_short_way_does_not_answer_is_aiohttps_with_the_rest(
    port: Port,
) -> None:
    reader, writer = await port.connect()
    writer.write(post(b"short first"))
    assert (await answer(reader))[2] == "short short first"
    writer.write(post(b'{"type": "block_actions"}') + post(b"short after"))
    assert (await answer(reader))[2] == 'aiohttp {"type": "block_actions"}'
    # the connection is aiohttp's from then on, the next request too
    assert (await answer(reader))[2] == "aiohttp short after"
    assert port.seen == [b'{"type": "block_actions"}', b"short after"]
    assert port.short.bodies == [b"short first", b'{"type": "block_actions"}']
    writer.close()


async def test_other_paths_go_to_aiohttp_unread(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: bot\r\n\r\n")
    assert (await answer(reader))[::2] == (200, "ok")
    writer.close()
    reader, writer = await port.connect()
    writer.write(post(b"short but not here", path="/slack/events?ssl_check=1"))
    assert (await answer(reader))[2] == "aiohttp short but not here"
    assert port.short.bodies == []
    writer.close()


async def test_a_chunked_body_is_read_by_aiohttp(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(
        b"POST /slack/events HTTP/1.1\r\nHost: bot\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nshort\r\n6\r\n chunk\r\n0\r\n\r\n"
    )
    assert (await answer(reader))[::2] == (200, "aiohttp short chunk")
    assert port.short.bodies == []
    writer.close()


async def test_a_smuggled_request_never_takes_the_short_way(port: Port) -> None:
    """Content-Length and Transfer-Encoding both: what is the body? Not ours to decide."""
    reader, writer = await port.connect()
    writer.write(post(b"0\r\n\r\nshort smuggled", "Transfer-Encoding: chunked"))
    status, _, _ = await answer(reader)
    assert status == 400
    assert port.short.bodies == []
    writer.close()


async def test_a_head_with_bare_line_feeds_is_aiohttps(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(post(b"short").replace(b"\r\n", b"\n"))
    status, _, _ = await answer(reader)
    assert status == 400  # aiohttp's parser (llhttp, strict) refuses it
    assert port.short.bodies == []
    writer.close()


async def test_a_body_over_one_mebibyte_gets_aiohttps_413(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(post(b"short" + b"x" * 1024**2))
    status, _, _ = await answer(reader)
    assert status == 413
    assert port.short.bodies == []
    writer.close()


async def test_connection_close_and_http_1_0_close_after_the_answer(port: Port) -> None:
    for request in (post(b"short", "Connection: close"), post(b"short", version="1.0")):
        reader, writer = await port.connect()
        writer.write(request)
        status, headers, _ = await answer(reader)
        assert (status, headers["connection"]) == (200, "close")
        assert await closed(reader)
        writer.close()


async def test_a_client_that_half_closes_still_gets_its_answer(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(post(b"short then EOF"))
    writer.write_eof()
    assert (await answer(reader))[2] == "short short then EOF"
    assert await closed(reader)
    writer.close()


async def test_a_failing_answer_is_a_500_and_the_connection_goes_on(port: Port) -> None:
    reader, writer = await port.connect()
    writer.write(post(b"boom"))
    assert (await answer(reader))[::2] == (500, "")
    writer.write(post(b"short again"))
    assert (await answer(reader))[2] == "short short again"
    writer.close()


async def test_a_connection_without_a_whole_request_is_closed_in_time(port: Port) -> None:
    assert port.events_port.door is not None
    port.events_port.door.request_timeout_s = 0.3
    reader, writer = await port.connect()
    writer.write(post(b"short never finished")[:-5])
    assert await closed(reader)
    assert port.short.bodies == []
    writer.close()


async def test_an_answer_under_way_finishes_when_the_client_leaves(port: Port) -> None:
    _reader, writer = await port.connect()
    writer.write(post(b"slow"))
    await port.short.started.wait()
    writer.close()
    port.short.go.set()
    await asyncio.wait_for(port.short.finished.wait(), 5)


async def test_stopping_finishes_the_answer_under_way_and_closes_idle_connections(
    port: Port,
) -> None:
    idle_reader, idle_writer = await port.connect()
    idle_writer.write(post(b"short"))
    await answer(idle_reader)
    reader, writer = await port.connect()
    writer.write(post(b"slow"))
    await port.short.started.wait()
    stopping = asyncio.create_task(port.events_port.stop())
    assert await closed(idle_reader)
    port.short.go.set()
    status, headers, body = await answer(reader)
    assert (status, headers["connection"], body) == (200, "close", "short slow")
    assert await closed(reader)
    await asyncio.wait_for(stopping, 5)
    writer.close()
    idle_writer.close()


async def test_at_its_most_connections_the_least_recently_answered_idle_one_makes_room(
    port: Port, caplog: pytest.LogCaptureFixture
) -> None:
    door = capped(port, 3)
    door.warn_every_s = 0.3
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for _ in range(3):  # one at a time: the door sees them open in this order
        opened.append(await port.connect())
        await until(lambda: len(door.connections) == len(opened))
    (first_reader, first_writer), (second_reader, _), (third_reader, third_writer) = opened
    first_writer.write(post(b"short first"))  # answered: now the most recent of the three
    assert (await answer(first_reader))[2] == "short short first"
    third_writer.write(post(b"short never finished")[:-5])  # still bringing its request
    await until(lambda: port.short.bodies == [b"short first"] and len(door.connections) == 3)

    newcomer_reader, newcomer_writer = await port.connect()
    assert await closed(second_reader)  # opened before the third, never answered
    newcomer_writer.write(post(b"short newcomer"))
    assert (await answer(newcomer_reader))[2] == "short short newcomer"
    fourth_reader, fourth_writer = await port.connect()
    assert await closed(third_reader)  # the trickling one: idle longer than the others
    for reader, writer, body in (
        (first_reader, first_writer, b"short again"),
        (fourth_reader, fourth_writer, b"short fourth"),
    ):
        writer.write(post(body))
        assert (await answer(reader))[2] == "short " + body.decode()

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if "most connections (3)" in r.getMessage()]

    # The first at once; the second, within the same interval, when the next warning is due.
    await until(lambda: len(warnings()) == 2)
    assert [w.split(": ")[1].split(" (")[0] for w in warnings()] == [
        "1 closed or refused for room",
        "1 closed or refused for room",
    ]
    for _, writer in (*opened, (newcomer_reader, newcomer_writer), (fourth_reader, fourth_writer)):
        writer.close()


async def test_when_every_connection_is_being_answered_a_newcomer_is_closed(
    port: Port, caplog: pytest.LogCaptureFixture
) -> None:
    capped(port, 2)
    busy = [await port.connect(), await port.connect()]
    for _, writer in busy:
        writer.write(post(b"slow"))
    await until(lambda: len(port.short.bodies) == 2)

    newcomer_reader, newcomer_writer = await port.connect()
    assert await closed(newcomer_reader)
    assert any("2): 1 closed or refused" in r.getMessage() for r in caplog.records)
    port.short.go.set()
    for reader, writer in busy:  # the answers under way are given
        assert (await answer(reader))[2] == "short slow"
        writer.close()
    newcomer_writer.close()
    reader, writer = await port.connect()  # the answers given, there is room again
    writer.write(post(b"short later"))
    assert (await answer(reader))[2] == "short short later"
    writer.close()


def test_the_cap_stays_below_the_files_the_process_may_open() -> None:
    assert connection_cap(1_048_576) == MAX_CONNECTIONS == 1024
    assert connection_cap(1024) == 512  # half: Redis, Slack and the model need files too
    assert connection_cap(1) == 1
    assert connection_cap(resource.RLIM_INFINITY) == MAX_CONNECTIONS
    assert connection_cap() == min(1024, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 2)


async def test_stopping_warns_of_what_the_minute_counted(
    port: Port, caplog: pytest.LogCaptureFixture
) -> None:
    door = capped(port, 1)
    held = [await port.connect()]
    await until(lambda: len(door.connections) == 1)
    for _ in range(3):  # each newcomer closes the one before: three for room
        held.append(await port.connect())
        assert await closed(held[-2][0])
    await port.events_port.stop()
    counted = [r.getMessage() for r in caplog.records if "most connections (1)" in r.getMessage()]
    assert [m.split(": ")[1].split(" closed")[0] for m in counted] == ["1", "2"]
    for _, writer in held:
        writer.close()
