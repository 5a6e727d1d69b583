"""Where a process listens, and the socket Slack's events arrive on."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

# Connections the kernel completes and holds for the app while its event loop is busy with
# others. Slack opens a new connection for each event; with aiohttp's default of 128, the
# connections of a burst beyond it had their SYN dropped and waited for TCP to send it again
# a second later (benchmarks/ack_floor.py: ack p99 about 1,030 ms for 200 at once, 74-105 ms
# with this). The kernel caps it at net.core.somaxconn.
EVENTS_BACKLOG = 2048


@dataclass(frozen=True)
class Listen:
    """The app's host and port (HTTP mode: Slack's events, /healthz and /readyz; Socket
    Mode: the endpoints, /metrics included), and ``metrics_port`` for the endpoints on a
    listener of their own (HTTP mode: the only one with /metrics)."""

    host: str = "0.0.0.0"
    port: int = 3000
    metrics_port: int | None = None


async def listen_for_events(runner: web.AppRunner, host: str, port: int) -> None:
    """Serve ``runner`` (set up) on ``host``:``port``, with room for a burst of new
    connections (:data:`EVENTS_BACKLOG`)."""
    await web.TCPSite(runner, host, port, backlog=EVENTS_BACKLOG).start()
