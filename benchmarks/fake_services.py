"""The fakes of benchmarks/slack_turns.py in a process of their own, so the client that
sends events and times the acks shares its event loop and its CPU with nothing else.

The child (``python -m benchmarks.fake_services --llm-ms N``) runs the fake Slack Web API and
the fake OpenAI-compatible model (each turn: a call of the ``slow_lookup`` tool, then the
answer, each reply after N ms), and a control endpoint for the benchmark:

- ``GET /calls``: every Slack call so far: method, channel, time of arrival
  (``time.monotonic()``: one clock for every process on the machine) and whether it
  completes an answer;
- ``GET /answered``: the channels whose answer is complete;
- ``POST /clear``: forget the calls so far.

It prints one JSON line with the three base URLs once it listens, and stops on SIGTERM.
:class:`FakeServices` is the benchmark's side.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.llm_server import FakeLLM, Reply, calls, text
from tests.fakes.slack_server import Call, FakeSlack

MENTIONER = "U0BENCH"  # the person every mention of the benchmarks comes from


@dataclass(frozen=True)
class SlackCall:
    method: str
    channel: str
    at: float  # time.monotonic() in the fakes' process: the same clock as the benchmark's
    completes: bool


def completes(call: Call) -> bool:
    """The call that makes the answer complete in Slack: the stream's end or the post/edit
    that carries it."""
    if call.status != 200:
        return False
    shown = str(call.args.get("text") or "") + str(call.args.get("markdown_text") or "")
    chunks = call.args.get("chunks") or []
    if isinstance(chunks, str):
        chunks = json.loads(chunks)
    shown += "".join(str(c.get("text", "")) for c in chunks if isinstance(c, dict))
    return "There are" in shown and call.method in (
        "chat.stopStream",
        "chat.postMessage",
        "chat.update",
    )


def channel_of(call: Call) -> str:
    return str(call.args.get("channel") or call.args.get("channel_id") or "")


def respond(llm_ms: int) -> Any:
    """The model's script: the tool first, then the answer once the tool's result is in."""

    def reply(request: dict[str, Any]) -> Reply:
        if request["messages"][-1]["role"] == "tool":
            return text("There are 12 in stock.", delay_s=llm_ms / 1000)
        return calls(("slow_lookup", {"item": "flour"}), delay_s=llm_ms / 1000)

    return reply


async def serve(llm_ms: int) -> None:
    slack, llm = FakeSlack(), FakeLLM()
    # The person who mentions the bot is of its workspace, as in a real one: users.info
    # answers, and the role cache keeps the answer for its full time (an unknown person's
    # lookup fails, is cached for 30 s only, and a burst then asks Slack again at once).
    slack.users[MENTIONER] = {}
    await slack.start()
    await llm.start()
    llm.otherwise = respond(llm_ms)

    async def listed(_: web.Request) -> web.Response:
        rows = [[c.method, channel_of(c), c.at, completes(c)] for c in slack.calls]
        return web.json_response(rows)

    async def answered(_: web.Request) -> web.Response:
        return web.json_response(sorted({channel_of(c) for c in slack.calls if completes(c)}))

    async def clear(_: web.Request) -> web.Response:
        slack.calls.clear()
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/calls", listed)
    app.router.add_get("/answered", answered)
    app.router.add_post("/clear", clear)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    urls = {"slack": slack.api_url, "llm": llm.base_url, "control": f"http://127.0.0.1:{port}"}
    print(json.dumps(urls), flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await llm.stop()
        await slack.stop()


class FakeServices:
    """The fakes' process, seen from the benchmark."""

    def __init__(self, process: asyncio.subprocess.Process, urls: dict[str, str]) -> None:
        self.process = process
        self.slack_url = urls["slack"]
        self.llm_url = urls["llm"]
        self.control = urls["control"]
        self._session = aiohttp.ClientSession()

    @classmethod
    async def start(cls, llm_ms: int) -> FakeServices:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.fake_services",
            "--llm-ms",
            str(llm_ms),
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        if not line:
            raise RuntimeError("the fakes' process did not start")
        return cls(process, json.loads(line))

    @property
    def pid(self) -> int:
        return self.process.pid

    async def calls(self) -> list[SlackCall]:
        async with self._session.get(self.control + "/calls") as response:
            return [SlackCall(*row) for row in await response.json()]

    async def answered(self) -> set[str]:
        async with self._session.get(self.control + "/answered") as response:
            return set(await response.json())

    async def clear(self) -> None:
        async with self._session.post(self.control + "/clear") as response:
            response.raise_for_status()

    async def stop(self) -> None:
        await self._session.close()
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        await self.process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--llm-ms", type=int, default=200)
    asyncio.run(serve(parser.parse_args().llm_ms))
