"""How a Slack process runs: the ingress (HTTP or Socket Mode) and what answers its turns
(the worker loop in this process, or worker processes under its supervision), or the
workers alone, until SIGINT or SIGTERM; then intake stops and running turns finish."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import REGISTRY

from bot.agent.cancellation import Interrupted, unless
from bot.health.endpoints import HealthServer
from bot.health.readiness import Readiness, redis_check
from bot.process.listen import EventsPort, Listen
from bot.process.scheduling import slack_scheduler
from bot.process.services import Services
from bot.process.slack import SlackSide, build_slack_side
from bot.process.worker import slack_worker
from bot.process.workers import Workers
from bot.schedules.scheduler import Scheduler
from bot.slack.inbound.http import ShortAnswers, http_app
from bot.slack.inbound.socket.pool import SocketPool
from bot.slack.tokens import verify_tokens
from bot.turn.worker.consumer import Worker

log = logging.getLogger(__name__)


@dataclass
class SlackProcess:
    """One process of the Slack app: the shared services, the Slack side, the worker and
    the scheduler that runs beside it (``WorkerLoop``)."""

    services: Services
    slack: SlackSide
    worker: Worker
    scheduler: Scheduler


def assemble(services: Services, *, http: bool) -> SlackProcess:
    slack = build_slack_side(services, http=http)
    worker = slack_worker(services, slack)
    return SlackProcess(services, slack, worker, slack_scheduler(services, slack, worker.name))


def stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def readiness_for(
    services: Services, workers: Workers | None, pool: SocketPool | None
) -> Readiness:
    readiness = Readiness({"redis": redis_check(services.state.client.ping)})
    if workers is not None:
        readiness.add("worker", workers.problem)
    if pool is not None:
        readiness.add("socket", pool.problem)
    return readiness


async def run(
    process: SlackProcess, *, socket_mode: bool, listen: Listen, workers: Workers | None
) -> None:
    """Serve until SIGINT or SIGTERM, then stop taking events and let running turns finish
    (``workers``: what answers the turns, None when other processes do).

    The signal handlers come first, and the endpoints' own listener (Socket Mode, or
    --metrics-port) opens before Slack is asked anything: a process still connecting to
    Slack answers /healthz (and /readyz says what it waits for) and stops at once. The
    workers start once Slack has taken the tokens.

    /metrics is never public by default: in HTTP mode the app's --port (Slack's events)
    serves /healthz and /readyz only, /metrics is on --metrics-port; in Socket Mode nothing
    public listens, and the endpoints' listener (--metrics-port, else --port) serves all
    three.

    With a server that signs people in, --port also serves the sign-in's pages (/oauth/*,
    bot/oauth/web.py): in HTTP mode beside Slack's events; in Socket Mode on the endpoints'
    listener when it is --port, else on a listener of its own on --port (/healthz and
    /readyz with them, /metrics staying on --metrics-port)."""
    stop = stop_on_signals()
    services, slack = process.services, process.slack
    env = services.environment
    app_token = env.slack_app_token.get_secret_value() if env.slack_app_token else None
    socket_mode = socket_mode and app_token is not None
    pool = (
        SocketPool(
            slack.app,
            app_token,
            slack.client,
            connections=services.config.slack.socket_connections,
            messages=slack.messages,
        )
        if socket_mode and app_token is not None
        else None
    )
    readiness = readiness_for(services, workers, pool)
    ping = services.state.client.ping
    registry = workers.registry() if workers is not None else REGISTRY
    reported = workers.health if workers is not None else None
    sign_in = sign_in_routes(services)
    health_port = (listen.metrics_port or listen.port) if socket_mode else listen.metrics_port
    health = (
        HealthServer(
            readiness,
            ping,
            listen.host,
            health_port,
            registry=registry,
            workers=reported,
            routes=sign_in if health_port == listen.port else (),
        )
        if health_port is not None and (socket_mode or health_port != listen.port)
        else None
    )
    sign_in_port = (
        HealthServer(readiness, ping, listen.host, listen.port, metrics=False, routes=sign_in)
        if socket_mode and sign_in and health_port != listen.port
        else None
    )
    events_port: EventsPort | None = None
    working: asyncio.Task[None] | None = None
    try:
        if health is not None:
            await health.start()
        if sign_in_port is not None:
            await sign_in_port.start()
        if isinstance(await unless(verify_tokens(slack.identity, app_token), stop), Interrupted):
            return
        if isinstance(await unless(slack.identity.share_with(slack.app), stop), Interrupted):
            return
        if workers is not None:
            working = asyncio.create_task(workers.run(stop))
        if pool is not None:
            pool.start()
            log.warning("slack-agent connecting in Socket Mode (%d connections)", len(pool.slots))
        else:
            secret = env.slack_signing_secret
            assert secret is not None  # build_slack_side(http=True) required it
            # Slack's events port is public: /metrics only where --metrics-port says.
            metrics_here = listen.metrics_port == listen.port
            short = ShortAnswers(secret.get_secret_value(), slack.messages)
            app = http_app(
                slack.app,
                ping,
                short,
                readiness,
                metrics=metrics_here,
                registry=registry,
                workers=reported,
                routes=sign_in,
            )
            events_port = EventsPort(app, short)
            await events_port.start(listen.host, listen.port)
            log.warning(
                "slack-agent listening on http://%s:%d/slack/events", listen.host, listen.port
            )
        await stop.wait()
    finally:
        if pool is not None:
            await pool.close()
        if events_port is not None:
            await events_port.stop()
        await slack.later.close()
        if working is not None:
            stop.set()
            await working
        await slack.client.aclose()
        if health is not None:
            await health.stop()
        if sign_in_port is not None:
            await sign_in_port.stop()


def sign_in_routes(services: Services) -> list[web.RouteDef]:
    """The sign-in's pages this process serves (none without a server that signs people in;
    the module, which loads the MCP SDK, is loaded only then)."""
    if services.state.oauth is None:
        return []
    from bot.oauth.web import oauth_routes

    return oauth_routes(services.state.oauth)


async def run_workers_only(services: Services, workers: Workers, listen: Listen) -> None:
    """``slack-agent worker``: the workers until SIGINT or SIGTERM; the endpoints on
    --metrics-port when given."""
    stop = stop_on_signals()
    log.warning("slack-agent worker started")
    working = asyncio.create_task(workers.run(stop))
    health: HealthServer | None = None
    try:
        if listen.metrics_port is not None:
            health = HealthServer(
                readiness_for(services, workers, None),
                services.state.client.ping,
                listen.host,
                listen.metrics_port,
                registry=workers.registry(),
                workers=workers.health,
            )
            await health.start()
        await working
    finally:
        stop.set()
        await working
        if health is not None:
            await health.stop()
