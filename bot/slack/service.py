"""Wiring the Slack side of one process: ingress (events to the queue), the worker (queue to
answers), and how they run: HTTP or Socket Mode, with or without in-process workers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.admin.commands import AdminCommands, AdminStores
from bot.config import ConfigError
from bot.config.requirements import missing_message, missing_settings
from bot.lifecycle.owner import Agent
from bot.services import Services
from bot.slack.after_ack import AfterAck
from bot.slack.app import build_app, web_client
from bot.slack.asker import SlackAsker
from bot.slack.context import SlackContext
from bot.slack.directory import SlackDirectory
from bot.slack.identity import BotIdentity
from bot.slack.inbox.compose import SlackInbox
from bot.slack.inbox.files import FileReader
from bot.slack.inbox.message import author_team
from bot.slack.inbox.names import SlackNames
from bot.slack.ingress import Ingress
from bot.slack.responder import SlackResponder
from bot.slack.server import http_app
from bot.turn import Turn
from bot.worker.assembly import build_worker
from bot.worker.consumer import Worker
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
        person = Person(turn.team, turn.user, turn.channel, user_team=author_team(turn))
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


async def run(
    service: SlackService, *, socket_mode: bool, host: str, port: int, with_worker: bool
) -> None:
    """Serve until SIGINT or SIGTERM, then stop taking events and let running turns finish."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await service.identity.share_with(service.app)
    worker_task = asyncio.create_task(service.worker.run(stop)) if with_worker else None
    runner: web.AppRunner | None = None
    socket_handler: AsyncSocketModeHandler | None = None
    try:
        if socket_mode:
            token = service.services.environment.slack_app_token
            assert token is not None
            socket_handler = AsyncSocketModeHandler(service.app, token.get_secret_value())
            await socket_handler.connect_async()  # type: ignore[no-untyped-call]
            log.warning("slack-agent connected in Socket Mode")
        else:
            secret = service.services.environment.slack_signing_secret
            assert secret is not None  # build_slack_service(http=True) required it
            runner = web.AppRunner(
                http_app(
                    service.app, service.services.state.client.ping, secret.get_secret_value()
                ),
                access_log=None,
            )
            await runner.setup()
            await web.TCPSite(runner, host, port).start()
            log.warning("slack-agent listening on http://%s:%d/slack/events", host, port)
        await stop.wait()
    finally:
        if socket_handler is not None:
            await socket_handler.close_async()  # type: ignore[no-untyped-call]
        if runner is not None:
            await runner.cleanup()
        await service.later.close()
        if worker_task is not None:
            stop.set()
            await worker_task


async def run_worker_only(service: SlackService) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    log.warning("slack-agent worker started")
    await service.worker.run(stop)
