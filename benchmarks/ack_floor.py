"""The floor under the burst's ack latency on this machine: the same client as
``slack_turns --burst`` (N signed mentions posted at once, each on a new connection) against
a bare aiohttp server in its own process that reads each body and answers 200, with no
Slack app, no signature check and no Redis behind it. Whatever this prints is the client's
and the kernel's share of an ack (plus aiohttp's own), which no change to the app can
remove; compare it with ``slack_turns --burst N`` in the same hour.

``--raw-client`` sends the burst with the lean client of ``slack_turns --raw-client``.

Run: uv run python -m benchmarks.ack_floor [--burst 200] [--runs 5] [--backlog N] [--raw-client]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys

import aiohttp
from aiohttp import web

from benchmarks.process_cpu import tree_cpu_seconds
from benchmarks.slack_turns import (
    SignedEvent,
    collector_held,
    percentile,
    post_raw,
    post_signed,
    wait_healthy,
)
from bot.process.heap import freeze_start_up
from bot.process.listen import EVENTS_BACKLOG
from tests.fakes.redis_server import free_port


async def handle_event(request: web.Request) -> web.Response:
    await request.read()
    return web.Response()


async def healthz(_: web.Request) -> web.Response:
    return web.Response()


def serve(port: int, backlog: int) -> None:
    """The bare server (``--serve PORT``, in a process of its own), with the app's garbage
    collector settings (bot/process/heap.py)."""
    app = web.Application()
    app.router.add_post("/slack/events", handle_event)
    app.router.add_get("/healthz", healthz)
    freeze_start_up()
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, backlog=backlog)


async def burst(count: int, backlog: int, raw_client: bool) -> tuple[list[float], float]:
    """One burst against a fresh server: each ack's milliseconds, the server's CPU seconds."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.ack_floor",
        "--serve",
        str(port),
        "--backlog",
        str(backlog),
    )
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            await wait_healthy(session, port)
            signed = [SignedEvent.mention(f"C{n:05d}", f"{1000 + n}.000001") for n in range(count)]
            await post_signed(session, port, signed[0])  # warm-up
            raw = [s.request(port) for s in signed] if raw_client else []
            cpu_before = tree_cpu_seconds(server.pid)
            with collector_held():
                if raw:
                    acks = list(await asyncio.gather(*(post_raw(port, r) for r in raw)))
                else:
                    sends = (post_signed(session, port, s) for s in signed)
                    acks = list(await asyncio.gather(*sends))
            return acks, tree_cpu_seconds(server.pid) - cpu_before
    finally:
        server.terminate()
        await server.wait()


async def main(count: int, runs: int, backlog: int, raw_client: bool) -> None:
    print(
        f"bare aiohttp server (listen backlog {backlog}), bursts of {count} mentions, each on "
        f"a new connection, {'the raw client' if raw_client else 'aiohttp client'}"
    )
    print(f"{'run':<5} {'ack p50':>9} {'p99':>9} {'max':>9}  server CPU per event")
    p99s = []
    for run in range(1, runs + 1):
        load = os.getloadavg()[0]
        acks, cpu_s = await burst(count, backlog, raw_client)
        p99s.append(percentile(acks, 0.99))
        print(
            f"{run:<5} {statistics.median(acks):9.1f} {p99s[-1]:9.1f} {max(acks):9.1f}"
            f"  {cpu_s * 1000 / count:.3f} ms (load before {load:.2f})"
        )
        await asyncio.sleep(1.0)
    print(f"ack p99 over the runs: {min(p99s):.1f}-{max(p99s):.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--burst", type=int, default=200, metavar="N")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--backlog",
        type=int,
        default=EVENTS_BACKLOG,
        help=f"the server's listen backlog (default {EVENTS_BACKLOG}, the app's; aiohttp's own "
        "default is 128)",
    )
    parser.add_argument(
        "--raw-client",
        action="store_true",
        help="send each request as bytes on a bare asyncio connection (as slack_turns does)",
    )
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.backlog)
    else:
        asyncio.run(main(args.burst, args.runs, args.backlog, args.raw_client))
