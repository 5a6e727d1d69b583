"""The ``slack-agent`` command: its arguments, and which command's process to run
(assembled in ``bot/process/commands.py``).

Only light modules are imported here. The app (the config's schema, the openai SDK, Bolt,
redis-py: about two seconds of start-up) loads after the arguments are parsed, so a worker
process holds on to its supervisor's lifeline before then, and dies with a supervisor
killed while it was still starting."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bot.config.errors import ConfigError
from bot.observability import logs
from bot.observability.redaction import print_redacted
from bot.process.lifeline import hold_on
from bot.process.worker_count import cpu_count


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
        "--channel",
        help="act in this Slack channel (its ID, e.g. C0SUPPORT): its settings from the "
        "config and from Slack, its notes, remember, its tools and budget",
    )
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
    turns = run.add_mutually_exclusive_group()
    turns.add_argument(
        "--workers",
        type=process_count,
        metavar="N",
        help="answer the turns in N worker processes beside this one, which only takes "
        "Slack's events and restarts a worker process that dies (default: one per CPU, "
        f"{cpu_count()} here; 0: the worker loop runs in this process; no REDIS_URL: 0)",
    )
    turns.add_argument(
        "--no-worker",
        action="store_true",
        help="only take Slack's events; leave the turns to `slack-agent worker` processes",
    )

    worker = commands.add_parser("worker", help="run only workers: answer queued turns")
    _config_option(worker)
    worker.add_argument(
        "--processes",
        type=process_count,
        metavar="N",
        help="N worker processes under this one, which restarts one that dies (default: one "
        f"per CPU, {cpu_count()} here; 0: the worker loop runs in this process; no "
        "REDIS_URL: 0)",
    )
    # Given by a supervisor to its worker processes: the read end of its lifeline.
    worker.add_argument("--supervisor-pipe", type=int, metavar="FD", help=argparse.SUPPRESS)
    for command in (run, worker):
        command.add_argument(
            "--metrics-port",
            type=int,
            help="serve /healthz, /readyz and /metrics on this port (run in HTTP mode: the "
            "only place /metrics is served, the app's public --port has /healthz and /readyz; "
            "run in Socket Mode: default the app's --port; worker: none unless given)",
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


def process_count(text: str) -> int:
    """A number of processes: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0 (give 0 or more processes)")
    return value


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
        if args.command == "worker" and args.supervisor_pipe is not None:
            hold_on(args.supervisor_pipe)
        from bot.console.chat import ChatOptions
        from bot.process import commands
        from bot.process.event_loop import run_service
        from bot.process.listen import Listen

        if args.command == "chat":
            options = ChatOptions(
                thread=args.thread,
                user=args.user,
                role=args.role,
                yes=args.yes,
                channel=args.channel,
            )
            return asyncio.run(commands.chat(args.config, options))
        if args.command == "run":
            listen = Listen(args.host, args.port, args.metrics_port)
            return _exit_now_if_stuck(
                run_service(
                    commands.run_app(
                        args.config, listen, with_worker=not args.no_worker, workers=args.workers
                    )
                )
            )
        if args.command == "worker":
            listen = Listen(metrics_port=args.metrics_port)
            return _exit_now_if_stuck(
                run_service(
                    commands.run_workers(
                        args.config,
                        listen,
                        processes=args.processes,
                    )
                )
            )
        if args.command == "check":
            from bot.check.runner import check_command

            return asyncio.run(check_command(args.config, args.json))
        if args.command == "tools":
            return asyncio.run(commands.list_tools(args.config, args.json))
    except ConfigError as exc:
        print_redacted(f"slack-agent: configuration error\n{exc}", sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 1


def _exit_now_if_stuck(code: int) -> int:
    """A sync tool still running in its thread would hold the interpreter's exit (its pool
    is joined at exit) for as long as it takes; its turn was handed back already."""
    from tools.definition import busy_sync_tools

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


if __name__ == "__main__":
    sys.exit(main())
