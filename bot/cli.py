"""The ``slack-agent`` command."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config import ConfigError
from bot.config.schema import AppConfig
from bot.console.chat import ChatOptions, console_toolset, run_chat
from bot.observability import logs, tracing
from bot.process.services import Services, Tools, build_services, load
from bot.state.persistence import check_persistence
from permissions.rules import roles_allowing
from tools.definition import busy_sync_tools

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="slack-agent",
        description="A Slack agent bot on any OpenAI-compatible LLM, with tools and roles.",
    )
    root.add_argument(
        "--log-level",
        default=os.environ.get("LOG_LEVEL"),
        help="DEBUG, INFO, WARNING or ERROR (or LOG_LEVEL); default INFO for run and worker, "
        "WARNING otherwise",
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chat = commands.add_parser(
        "chat", help="talk to the agent in the terminal (reads stdin lines when piped)"
    )
    _config_option(chat)
    chat.add_argument("--thread", default="default", help="conversation to continue")
    chat.add_argument("--user", help="Slack user ID to act as (chooses roles)")
    chat.add_argument("--role", help="act with exactly this role from the config")
    chat.add_argument(
        "--yes", action="store_true", help="approve tools that need confirmation without asking"
    )

    run = commands.add_parser(
        "run",
        help="run the Slack app: Socket Mode with SLACK_APP_TOKEN, else HTTP on --port",
    )
    _config_option(run)
    run.add_argument("--host", default="0.0.0.0", help="HTTP mode: address to listen on")
    run.add_argument("--port", type=int, default=3000, help="HTTP mode: port (default 3000)")
    run.add_argument(
        "--no-worker",
        action="store_true",
        help="only take Slack's events; leave the turns to `slack-agent worker` processes",
    )

    worker = commands.add_parser("worker", help="run only workers: answer queued turns")
    _config_option(worker)
    for command in (run, worker):
        command.add_argument(
            "--metrics-port",
            type=int,
            help="serve /healthz, /readyz and /metrics on this port too (run: default the "
            "app's --port; worker: none unless given)",
        )

    check = commands.add_parser(
        "check", help="check the config, then every dependency; exit 1 on any problem"
    )
    _config_option(check)
    check.add_argument("--json", action="store_true", help="print JSON")

    listing = commands.add_parser("tools", help="list every tool with its source and schema")
    _config_option(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    return root


def _config_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--config", type=Path, help="YAML config file (default: $SLACK_AGENT_CONFIG)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        log_format = logs.log_format_from(os.environ.get("LOG_FORMAT"))
    except ValueError as exc:
        print(f"slack-agent: {exc}", file=sys.stderr)
        return 2
    logs.configure(
        args.log_level or ("INFO" if args.command in ("run", "worker") else "WARNING"),
        log_format,
    )
    try:
        if args.command == "chat":
            options = ChatOptions(thread=args.thread, user=args.user, role=args.role, yes=args.yes)
            return asyncio.run(_chat(build_services(args.config), options))
        if args.command == "run":
            return _exit_now_if_stuck(asyncio.run(_run(build_services(args.config, "run"), args)))
        if args.command == "worker":
            return _exit_now_if_stuck(
                asyncio.run(_worker(build_services(args.config, "worker"), args))
            )
        if args.command == "check":
            return asyncio.run(_check(args.config, args.json))
        if args.command == "tools":
            config, _, tools = load(args.config)  # listing tools needs no model credentials
            return asyncio.run(_list_tools(config, tools, args.json))
    except ConfigError as exc:
        print(f"slack-agent: configuration error\n{exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 1


def _exit_now_if_stuck(code: int) -> int:
    """A sync tool still running in its thread would hold the interpreter's exit (its pool
    is joined at exit) for as long as it takes; its turn was handed back already."""
    stuck = busy_sync_tools()
    if stuck:
        logging.getLogger(__name__).warning(
            "exiting with %d sync tool call(s) still running; their turns were handed back",
            stuck,
        )
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


async def _chat(services: Services, options: ChatOptions) -> int:
    try:
        await console_toolset(services, options)  # a bad --role fails before the first prompt
        await services.start()
        return await run_chat(services, options)
    finally:
        await services.aclose()


async def _run(services: Services, args: argparse.Namespace) -> int:
    from bot.process.slack import Listen, build_slack_service, run

    socket_mode = services.environment.slack_app_token is not None
    traces = _start_tracing(services)
    try:
        service = build_slack_service(services, http=not socket_mode)
        await check_persistence(services.state.handle, services.config.redis.require_persistence)
        await services.start()
        await run(
            service,
            socket_mode=socket_mode,
            listen=Listen(args.host, args.port, args.metrics_port),
            with_worker=not args.no_worker,
        )
        return 0
    finally:
        await services.aclose()
        if traces is not None:
            traces.shutdown()  # sends the spans still buffered


async def _worker(services: Services, args: argparse.Namespace) -> int:
    from bot.process.slack import Listen, build_slack_service, run_worker_only

    traces = _start_tracing(services)
    try:
        service = build_slack_service(services, http=False)
        await check_persistence(services.state.handle, services.config.redis.require_persistence)
        await services.start()
        await run_worker_only(service, Listen(metrics_port=args.metrics_port))
        return 0
    finally:
        await services.aclose()
        if traces is not None:
            traces.shutdown()


def _start_tracing(services: Services) -> TracerProvider | None:
    """Traces go out only when an OTLP endpoint is set (environment or config)."""
    telemetry = services.config.telemetry
    return tracing.configure(telemetry.otlp_endpoint, telemetry.service_name)


async def _check(cli_config: Path | None, as_json: bool) -> int:
    from bot.check.findings import as_json as json_report
    from bot.check.findings import as_text, exit_code
    from bot.check.runner import run_checks

    findings = await run_checks(cli_config)
    print(json_report(findings) if as_json else as_text(findings))
    return exit_code(findings)


async def _list_tools(config: AppConfig, tools: Tools, as_json: bool) -> int:
    """Every tool (built-in, module, MCP) with its source, title, hints, schema and the roles
    that may use it. Exits 1, after printing everything else, when a configured MCP server
    could not be listed."""
    await tools.start()
    try:
        listed = await tools.registry.list_tools()
        down = {
            c.name: tools.mcp.not_listed(c)
            for c in tools.mcp.connections.values()
            if not c.connected.is_set()
        }
    finally:
        await tools.aclose()

    def who(name: str) -> list[str]:
        return roles_allowing(name, config.roles) if config.roles else ["everyone"]

    if as_json:
        rows = [
            {
                "name": t.name,
                "title": t.title,
                "source": t.source,
                "description": t.description,
                "annotations": t.hints.as_json(),
                "parameters": t.parameters,
                "output_schema": t.output_schema,
                "timeout_s": t.timeout_s,
                "confirm": t.confirm,
                "roles": who(t.name),
            }
            for t in listed
        ]
        print(json.dumps(rows, indent=2))
    else:
        for t in listed:
            flags = " (needs confirmation)" if t.confirm else ""
            title = f" — {t.title}" if t.title and t.title != t.name else ""
            print(f"{t.name}{title}  [{t.source}]{flags}")
            print(f"    {t.description.splitlines()[0] if t.description else ''}")
            hints = t.hints.labels()
            if hints:
                print(f"    annotations: {', '.join(hints)}")
            print(f"    roles: {', '.join(who(t.name)) or 'none'}")
            print(f"    parameters: {json.dumps(t.parameters)}")
            if t.output_schema:
                print(f"    returns: {json.dumps(t.output_schema)}")
    sys.stdout.flush()
    for name, why in down.items():
        print(f"slack-agent: MCP server {name} {why}: its tools are not listed", file=sys.stderr)
    return 1 if down else 0


if __name__ == "__main__":
    sys.exit(main())
