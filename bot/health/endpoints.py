"""``/healthz``, ``/readyz`` and ``/metrics`` as aiohttp routes, added to the app's own HTTP
server or served on a listener of their own (``--metrics-port``, Socket Mode, workers).

The app's HTTP server in HTTP mode is the one Slack reaches, so it is public: it serves
``/healthz`` and ``/readyz`` but not ``/metrics``, which is only on ``--metrics-port`` (in
Socket Mode nothing public listens, and ``--port`` serves all three).

- ``/healthz``: liveness. 200 whenever the process answers; Redis is reported, not required
  (a Redis outage must not make an orchestrator restart every replica), and so are a
  supervisor's worker processes (``workers``: alive, wanted, restarts), which it restarts
  itself.
- ``/readyz``: 200 when every readiness check holds, else 503; the JSON body names each
  check and what is wrong.
- ``/metrics``: Prometheus text of the default registry (``prometheus_client.REGISTRY``), or
  of the registry given (a supervisor's: its own metrics and its worker processes',
  bot/observability/process_metrics.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import prometheus_client
from aiohttp import web
from prometheus_client import CollectorRegistry

from bot.config.errors import ConfigError
from bot.health.readiness import Readiness

log = logging.getLogger(__name__)


def add_routes(
    app: web.Application,
    readiness: Readiness,
    ping_redis: Callable[[], Awaitable[Any]],
    *,
    metrics: bool = True,
    registry: CollectorRegistry = prometheus_client.REGISTRY,
    workers: Callable[[], dict[str, int] | None] | None = None,
) -> None:
    """``/healthz`` and ``/readyz``, and ``/metrics`` (of ``registry``) unless ``metrics`` is
    off; ``workers`` adds what a supervisor says of its worker processes to ``/healthz``."""

    async def healthz(request: web.Request) -> web.Response:
        try:
            await ping_redis()
            redis = "ok"
        except Exception as exc:
            redis = f"unreachable ({type(exc).__name__})"
        body: dict[str, Any] = {"ok": True, "redis": redis}
        reported = workers() if workers is not None else None
        if reported is not None:
            body["workers"] = reported
        return web.json_response(body)

    async def readyz(request: web.Request) -> web.Response:
        report = await readiness.report()
        return web.json_response(report.as_json(), status=200 if report.ready else 503)

    async def prometheus_text(request: web.Request) -> web.Response:
        body = prometheus_client.generate_latest(registry)
        return web.Response(
            body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST}
        )

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if metrics:
        app.router.add_get("/metrics", prometheus_text)


class HealthServer:
    """The three endpoints on a listener of their own (``metrics`` off: /healthz and
    /readyz only), and ``routes`` beside them (the sign-in's pages in Socket Mode)."""

    def __init__(
        self,
        readiness: Readiness,
        ping_redis: Callable[[], Awaitable[Any]],
        host: str,
        port: int,
        *,
        registry: CollectorRegistry = prometheus_client.REGISTRY,
        workers: Callable[[], dict[str, int] | None] | None = None,
        metrics: bool = True,
        routes: Sequence[web.RouteDef] = (),
    ) -> None:
        app = web.Application()
        add_routes(app, readiness, ping_redis, metrics=metrics, registry=registry, workers=workers)
        app.add_routes(routes)
        self.served = "/healthz /readyz" + (" /metrics" if metrics else "")
        if routes:
            self.served += " /oauth/*"
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        self.host, self.port = host, port
        self.started = False

    async def start(self) -> None:
        """Listen; a port already taken is a ConfigError (exit 2) that says what to change."""
        await self.runner.setup()
        try:
            await web.TCPSite(self.runner, self.host, self.port).start()
        except OSError as exc:
            await self.runner.cleanup()
            raise ConfigError(
                f"cannot listen on {self.host}:{self.port} for {self.served} "
                f"({exc.strerror or exc}); choose a free --port or --metrics-port"
            ) from None
        self.started = True
        log.info("health and metrics on http://%s:%d (%s)", self.host, self.port, self.served)

    async def stop(self) -> None:
        if self.started:
            self.started = False
            await self.runner.cleanup()
