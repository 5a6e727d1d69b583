"""Each ``slack-agent`` command's process, assembled and run: the one place that decides
what a command builds (config, stores, tools and MCP, model, policy, the Slack side, the
worker), starts and closes. ``bot/cli.py`` only parses and dispatches; ``check`` builds
what it checks with ``services.load`` (``bot/check/runner.py``)."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.budget.budgets import Spender
from bot.channels.reader import ChannelView
from bot.channels.remember import remember_tool
from bot.config.errors import ConfigError
from bot.console.channel import ConsoleChannel
from bot.console.chat import CONSOLE_TEAM, ChatOptions, ConsoleTools, Conversation, run_chat
from bot.llm.model import ChatModel
from bot.observability import tracing
from bot.observability.process_metrics import WorkerMetrics
from bot.observability.redaction import print_redacted
from bot.process.heap import freeze_start_up
from bot.process.listen import Listen
from bot.process.services import Services, build_services, load
from bot.process.state import busy_connections
from bot.process.supervisor import Supervisor, WorkerLaunch
from bot.process.tool_listing import personal_lines, signs_in, tool_lines, tool_row
from bot.process.worker import channel_reader, channel_tools
from bot.process.worker_count import cpu_count, worker_processes
from bot.schedules.run_tools import IN_THE_CONSOLE, WithoutScheduling
from bot.state.redis.mode import check_cluster_mode
from bot.state.redis.persistence import check_persistence
from permissions.policy import Person
from permissions.sources import role_names
from tools.approval import Approver
from tools.definition import Tool
from tools.mcp.oauth.account import Account
from tools.toolset import Toolset

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from bot.console.sign_in import ConsoleTerminal
    from bot.process.workers import Workers

STOP_MARGIN_S = 5.0  # beyond a worker's own grace and hand-back, before it is killed
CHANNEL_ID = re.compile(r"^[CDG][A-Z0-9]{2,}$")  # what `chat --channel` takes


async def chat(config: Path | None, options: ChatOptions) -> int:
    """``slack-agent chat``: the same loop, tools and policy as in Slack, in a terminal."""
    if options.channel is not None and not CHANNEL_ID.match(options.channel):
        raise ConfigError(
            f"--channel: {options.channel!r} is not a Slack channel ID (C…, G… or D…)"
        )
    services = build_services(config, "chat", console=True)
    try:
        tools = await console_tools(services, options)  # a bad --role fails before any prompt
        await services.start()
        # Within the console person's spending limits, like a Slack turn.
        user = options.user or "console"
        spender = Spender(CONSOLE_TEAM, user, tuple(tools.roles), options.channel)
        conversation = Conversation(
            services.budgets.guard(services.model, spender),
            services.loop_settings,
            services.state.threads.history,
            services.config.history.token_budget,
            services.model.estimator,
            console_channel(services, options, spender),
        )
        return await run_chat(conversation, tools, options)
    finally:
        await services.aclose()


def console_channel(
    services: Services, options: ChatOptions, spender: Spender
) -> ConsoleChannel | None:
    """With ``--channel``: that channel's settings and notes (the file's and Slack's), its
    ``remember`` and its budget for the console's turns."""
    channel = options.channel
    if channel is None:
        return None
    reader, user = channel_reader(services), options.user or "console"

    async def read() -> ChannelView:
        return await reader.read(channel, user, False)

    def remember(view: ChannelView, prompt: str) -> Tool | None:
        if not view.settings.may_remember(False):  # the console's person is of this workspace
            return None
        memory, command = services.state.shared.memory, services.config.slack.command
        return remember_tool(memory, CONSOLE_TEAM, channel, user, prompt, command)

    async def model(view: ChannelView) -> ChatModel:
        budget = view.settings.budget.value
        return services.budgets.guard(services.model, replace(spender, channel_budget=budget))

    return ConsoleChannel(channel, read, remember, model, services.model.estimator)


async def console_tools(services: Services, options: ChatOptions) -> ConsoleTools:
    """The tools the console's person may use: the same policy as in Slack (roles from the
    config and grants, switches, which calls need approval and who may give it); ``--role``
    fixes the role. With MCP servers that sign each person in, the person's own tools of
    those servers too, each call waiting for them to connect at the terminal."""
    config, roles, policy = services.config, services.config.roles, services.policy
    user = options.user or "console"
    person = Person(CONSOLE_TEAM, user, options.channel, user_team=CONSOLE_TEAM)
    if options.role is not None:
        if options.role not in roles:
            known = ", ".join(roles) or "none are configured"
            raise ConfigError(f"--role: unknown role {options.role!r} (roles: {known})")
        held = [options.role]
    else:
        held = role_names(await policy.held(person))

    side, account = services.state.oauth, Account(CONSOLE_TEAM, user)
    personal = services.tools.mcp.personal if side is not None else {}
    inner: Toolset = services.registry
    if personal:  # loaded only with a server that signs people in (they load the MCP SDK)
        from tools.mcp.oauth.gate import PersonalToolset

        inner = PersonalToolset(services.registry, personal, account)

    def guarded(approver: Approver | None, channel: ChannelView | None) -> Toolset:
        offered = WithoutScheduling(channel_tools(inner, channel), IN_THE_CONSOLE)
        return policy.guarded(offered, person, approver, held)

    sign_in: Callable[[Toolset, ConsoleTerminal], Toolset] | None = None
    if side is not None and personal:
        from bot.console.sign_in import ConsoleSignIn
        from bot.oauth.web import oauth_routes
        from tools.mcp.oauth.gate import SignInToolset

        oauth_side, routes = side, oauth_routes(side)

        def sign_in(toolset: Toolset, terminal: ConsoleTerminal) -> Toolset:
            connector = ConsoleSignIn(
                oauth_side,
                personal,
                account,
                routes,
                terminal,
                timeout_s=config.approval.timeout_s,
                port=config.oauth.console_port,
            )
            return SignInToolset(toolset, connector, personal)

    may_decide = await policy.may_decide(person, is_requester=True, held=held)
    return ConsoleTools(guarded, held, may_decide, sign_in)


async def run_app(
    config: Path | None, listen: Listen, *, with_worker: bool, workers: int | None
) -> int:
    """``slack-agent run``: Slack's events (Socket Mode with SLACK_APP_TOKEN, else HTTP),
    and the turns answered by ``workers`` worker processes under this one's supervision
    (None: one per CPU; 0: the worker loop in this process), or by other processes when
    ``with_worker`` is off."""
    # The Slack side and the worker: only for the Slack commands.
    from bot.process.run import assemble, run
    from bot.process.workers import WorkerLoop

    services = build_services(config, "run")
    socket_mode = services.environment.slack_app_token is not None
    traces = _start_tracing(services)
    metrics_files: WorkerMetrics | None = None
    try:
        embedded = services.state.handle.embedded
        count = (
            worker_processes(workers, option="--workers", embedded=embedded, cpus=cpu_count())
            if with_worker
            else 0
        )
        process = assemble(services, http=not socket_mode)
        await check_cluster_mode(services.state.handle, services.config.redis.cluster)
        await check_persistence(services.state.handle, services.config.redis.require_persistence)
        await services.state.handle.warm(busy_connections(services.config))
        await services.start()
        answering: Workers | None = None
        if count:
            metrics_files = WorkerMetrics()
            answering = supervisor(count, config, services, metrics_files)
        elif with_worker:
            services.model.load()  # the SDK, before the first turn and the heap's freeze
            answering = WorkerLoop(process.worker, process.scheduler)
        freeze_start_up()
        await run(process, socket_mode=socket_mode, listen=listen, workers=answering)
        return 0
    finally:
        await services.aclose()
        if metrics_files is not None:
            metrics_files.close()
        if traces is not None:
            traces.shutdown()  # sends the spans still buffered


async def run_workers(
    config: Path | None,
    listen: Listen,
    *,
    processes: int | None,
) -> int:
    """``slack-agent worker``: only the queue's turns, in ``processes`` worker processes under
    this one's supervision (None: one per CPU; 0: the worker loop in this process). A
    supervisor's worker process has held on to its lifeline already (bot/cli.py)."""
    from bot.process.run import assemble, run_workers_only
    from bot.process.workers import WorkerLoop

    services = build_services(config, "worker")
    traces = _start_tracing(services)
    metrics_files: WorkerMetrics | None = None
    try:
        embedded = services.state.handle.embedded
        count = worker_processes(
            processes, option="--processes", embedded=embedded, cpus=cpu_count()
        )
        if count:
            await check_cluster_mode(services.state.handle, services.config.redis.cluster)
            await check_persistence(
                services.state.handle, services.config.redis.require_persistence
            )
            metrics_files = WorkerMetrics()
            await run_workers_only(
                services, supervisor(count, config, services, metrics_files), listen
            )
            return 0
        process = assemble(services, http=False)
        await check_cluster_mode(services.state.handle, services.config.redis.cluster)
        await check_persistence(services.state.handle, services.config.redis.require_persistence)
        await services.state.handle.warm(busy_connections(services.config))
        await services.start()
        services.model.load()  # the SDK, before the first turn and the heap's freeze
        freeze_start_up()
        try:
            await run_workers_only(services, WorkerLoop(process.worker, process.scheduler), listen)
        finally:
            await process.slack.client.aclose()  # its shared Slack session
        return 0
    finally:
        await services.aclose()
        if metrics_files is not None:
            metrics_files.close()
        if traces is not None:
            traces.shutdown()


def supervisor(
    count: int, config: Path | None, services: Services, metrics_files: WorkerMetrics
) -> Supervisor:
    """``count`` worker processes: ``slack-agent worker --processes 0`` with this process's
    config file, environment and log level; each given the time a worker takes to stop
    (``queue.shutdown_grace_s``, then handing turns back) before it is killed."""
    from bot.turn.worker.consumer import HAND_BACK_WAIT_S

    level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    arguments = ["--log-level", str(level), "worker", "--processes", "0"]
    if config is not None:
        arguments += ["--config", str(config)]
    stop_within_s = services.config.queue.shutdown_grace_s + HAND_BACK_WAIT_S + STOP_MARGIN_S
    return Supervisor(
        count,
        WorkerLaunch(tuple(arguments)),
        stop_within_s=stop_within_s,
        metrics_files=metrics_files,
    )


def _start_tracing(services: Services) -> TracerProvider | None:
    """Traces go out only when an OTLP endpoint is set (environment or config)."""
    telemetry = services.config.telemetry
    return tracing.configure(telemetry.otlp_endpoint, telemetry.service_name)


async def list_tools(config_file: Path | None, as_json: bool) -> int:
    """Every tool (built-in, module, MCP) with its source, title, hints, schema, the name its
    MCP server knows it by, the roles that may use it and whether its calls wait for a
    person's approval, and why (``tool_listing.py``); a server that signs each person in
    with what a person who has not connected is offered (no person's session is opened).
    Exits 1, after printing everything else, when a configured MCP server could not be
    listed. Needs no model credentials."""
    config, _, tools = load(config_file)
    await tools.start()
    try:
        listed = await tools.registry.list_tools()
        personal = {
            name: await server.listed_for_nobody() for name, server in tools.mcp.personal.items()
        }
        down = {
            c.name: tools.mcp.not_listed(c)
            for c in tools.mcp.connections.values()
            if not c.connected.is_set()
        }
    finally:
        await tools.aclose()

    if as_json:
        rows = [tool_row(t, config.approval, config.roles) for t in listed]
        rows += [
            {**tool_row(t, config.approval, config.roles), "signs_in": signs_in(name)}
            for name, offered in personal.items()
            for t in offered
        ]
        print_redacted(json.dumps(rows, indent=2))
    else:
        lines = [line for t in listed for line in tool_lines(t, config.approval, config.roles)]
        for name, offered in personal.items():
            lines += personal_lines(name, [t.name for t in offered])
            lines += [
                line for t in offered for line in tool_lines(t, config.approval, config.roles)
            ]
        if lines:
            print_redacted("\n".join(lines))
    sys.stdout.flush()
    for name, why in down.items():
        print_redacted(
            f"slack-agent: MCP server {name} {why}: its tools are not listed", sys.stderr
        )
    return 1 if down else 0
