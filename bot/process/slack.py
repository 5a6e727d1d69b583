"""Wiring the Slack side of one process: ingress (events to the queue), the worker (queue to
answers), and how they run: HTTP or Socket Mode, with or without in-process workers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable
from dataclasses import dataclass

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.admin.commands import AdminCommands, AdminStores
from bot.config import ConfigError
from bot.config.requirements import missing_message, missing_settings
from bot.health.endpoints import HealthServer
from bot.health.readiness import Readiness, redis_check, worker_check
from bot.process.services import Services
from bot.process.worker import build_worker
from bot.slack.directory import SlackDirectory
from bot.slack.identity import BotIdentity
from bot.slack.inbound.after_ack import AfterAck
from bot.slack.inbound.app import build_app, web_client
from bot.slack.inbound.http import http_app
from bot.slack.inbound.inbox.compose import SlackInbox
from bot.slack.inbound.inbox.context import SlackContext
from bot.slack.inbound.inbox.files import FileReader
from bot.slack.inbound.inbox.names import SlackNames
from bot.slack.inbound.ingress import Ingress
from bot.slack.inbound.socket.pool import SocketPool
from bot.slack.outbound.asker import SlackAsker
from bot.slack.outbound.responder import SlackResponder
from bot.slack.tokens import verify_tokens
from bot.turn.agent import Agent
from bot.turn.model import Turn
from bot.turn.worker.consumer import Worker
from permissions.policy import Person
from tools.call_context import Requester, for_requester
from tools.toolset import Toolset

log = logging.getLogger(__name__)


@dataclass
class SlackService:
    services: Services
    client: AsyncWebClient
    ingress: Ingress
    worker: Worker
    app: AsyncApp
    later: AfterAck  # listeners' Slack work after their ack
    identity: BotIdentity


def build_slack_service(services: Services, *, http: bool) -> SlackService:
    env = services.environment
    missing = missing_settings(env, services.config, "run" if http else "worker")
    if missing or env.slack_bot_token is None:
        raise ConfigError(missing_message(missing))
    settings = services.config.slack
    client = web_client(env.slack_bot_token.get_secret_value(), env.slack_api_url)
    state = services.state

    policy = services.policy
    # Roles from user groups and workspace admin status need Slack.
    policy.resolver.directory = SlackDirectory(client, state.cache)

    async def toolset_for(turn: Turn) -> Toolset:
        person = Person(turn.team, turn.user, turn.channel, user_team=turn.author_team)
        allowed = policy.toolset(services.registry, person)
        # The turn's tools run for its person, who is asked in the thread (MCP elicitation).
        asker = SlackAsker(client, state.elicitations, turn)
        requester = Requester(turn.team, turn.user, turn.channel, turn.thread_ts, asker)
        return for_requester(allowed, requester)

    agent = Agent(
        model=services.model,
        settings=services.loop_settings,
        toolset_for=toolset_for,
        history_budget=services.config.history.token_budget,
        estimator=services.model.estimator,
        context_for=SlackContext(state.pane),
    )
    identity = BotIdentity(client)

    agent.message_for = SlackInbox(
        client,
        SlackNames(client, state.cache),
        FileReader(client, text_chars=settings.file_text_chars),
        state.asides,
        state.history,
        identity.me,
        budget_tokens=services.config.history.token_budget,
        estimator=services.model.estimator,
        vision=services.config.llm.vision,
    )
    responder = SlackResponder(
        client, settings, identity, stops=state.stops, model=services.config.llm.model
    )
    worker = build_worker(state, agent, responder, services.config.queue)
    ingress = Ingress(state.queue, state.participation, settings, state.asides)
    secret = (
        env.slack_signing_secret.get_secret_value() if http and env.slack_signing_secret else None
    )
    admin = AdminCommands(
        settings.command,
        policy,
        services.registry,
        services.config.roles,
        AdminStores(state.switches, state.grants, state.audit, state.usage, state.feedback),
        permalink=identity.permalink,
    )
    later = AfterAck()
    app = build_app(
        client,
        ingress,
        settings,
        signing_secret=secret,
        admin=admin,
        policy=policy,
        registry=services.registry,
        stops=state.stops,
        pane=state.pane,
        feedback=state.feedback,
        later=later,
        elicitations=state.elicitations,
    )
    return SlackService(services, client, ingress, worker, app, later, identity)


@dataclass(frozen=True)
class Listen:
    """Where the process listens: the app's host and port (HTTP mode: Slack's events and
    the endpoints; Socket Mode: the endpoints), and ``metrics_port`` for the endpoints on a
    listener of their own."""

    host: str = "0.0.0.0"
    port: int = 3000
    metrics_port: int | None = None


def stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def unless_stopped(work: Awaitable[None], stop: asyncio.Event) -> bool:
    """Run ``work`` until it ends or ``stop`` is set (then cancel it); True if it ended."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if task.done():
        task.result()
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False


class Started:
    """The worker loop's task once it runs (readiness asks before and after)."""

    def __init__(self, service: SlackService) -> None:
        self.service = service
        self.task: asyncio.Task[None] | None = None

    def alive(self) -> bool:
        task = self.task
        return task is not None and not task.done() and self.service.worker.alive


def readiness_for(
    service: SlackService, worker: Started | None, pool: SocketPool | None
) -> Readiness:
    readiness = Readiness({"redis": redis_check(service.services.state.client.ping)})
    if worker is not None:
        readiness.add("worker", worker_check(worker.alive))
    if pool is not None:
        readiness.add("socket", pool.problem)
    return readiness


async def run(
    service: SlackService, *, socket_mode: bool, listen: Listen, with_worker: bool
) -> None:
    """Serve until SIGINT or SIGTERM, then stop taking events and let running turns finish.

    The signal handlers come first, and the endpoints' own listener (Socket Mode, or
    --metrics-port) opens before Slack is asked anything: a process still connecting to
    Slack answers /healthz (and /readyz says what it waits for) and stops at once."""
    stop = stop_on_signals()
    env = service.services.environment
    app_token = env.slack_app_token.get_secret_value() if env.slack_app_token else None
    socket_mode = socket_mode and app_token is not None
    pool = (
        SocketPool(
            service.app,
            app_token,
            service.client,
            connections=service.services.config.slack.socket_connections,
        )
        if socket_mode and app_token is not None
        else None
    )
    worker = Started(service) if with_worker else None
    readiness = readiness_for(service, worker, pool)
    ping = service.services.state.client.ping
    health_port = (listen.metrics_port or listen.port) if socket_mode else listen.metrics_port
    health = (
        HealthServer(readiness, ping, listen.host, health_port)
        if health_port is not None and (socket_mode or health_port != listen.port)
        else None
    )
    runner: web.AppRunner | None = None
    try:
        if health is not None:
            await health.start()
        if not await unless_stopped(verify_tokens(service.identity, app_token), stop):
            return
        if not await unless_stopped(service.identity.share_with(service.app), stop):
            return
        if worker is not None:
            worker.task = asyncio.create_task(service.worker.run(stop))
        if pool is not None:
            pool.start()
            log.warning("slack-agent connecting in Socket Mode (%d connections)", len(pool.slots))
        else:
            secret = env.slack_signing_secret
            assert secret is not None  # build_slack_service(http=True) required it
            runner = web.AppRunner(
                http_app(service.app, ping, secret.get_secret_value(), readiness),
                access_log=None,
            )
            await runner.setup()
            await web.TCPSite(runner, listen.host, listen.port).start()
            log.warning(
                "slack-agent listening on http://%s:%d/slack/events", listen.host, listen.port
            )
        await stop.wait()
    finally:
        if pool is not None:
            await pool.close()
        if runner is not None:
            await runner.cleanup()
        await service.later.close()
        if worker is not None and worker.task is not None:
            stop.set()
            await worker.task
        if health is not None:
            await health.stop()


async def run_worker_only(service: SlackService, listen: Listen) -> None:
    stop = stop_on_signals()
    log.warning("slack-agent worker started")
    worker = Started(service)
    worker.task = worker_task = asyncio.create_task(service.worker.run(stop))
    health: HealthServer | None = None
    try:
        if listen.metrics_port is not None:
            readiness = readiness_for(service, worker, None)
            ping = service.services.state.client.ping
            health = HealthServer(readiness, ping, listen.host, listen.metrics_port)
            await health.start()
        await worker_task
    finally:
        stop.set()
        await worker_task
        if health is not None:
            await health.stop()
