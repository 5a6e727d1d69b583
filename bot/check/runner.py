"""Run every check of `slack-agent check` and gather the findings: the config first, then
the environment, then every dependency at once, each within a time limit, so that one
command shows every problem."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

from pydantic import SecretStr

from bot.check.findings import Finding, as_text, exit_code, fail, ok, skip, warn
from bot.check.findings import as_json as json_report
from bot.check.mcp_servers import check_mcp
from bot.check.model import check_model
from bot.check.oauth import check_oauth
from bot.check.slack import check_slack, check_socket_mode
from bot.check.storage import check_redis
from bot.config.environment import Environment
from bot.config.errors import ConfigError
from bot.config.requirements import missing_settings, socket_mode, token_shape_problems
from bot.config.schema import AppConfig
from bot.observability.redaction import print_redacted
from bot.process.services import Tools, config_path, load

LIMIT_S = 45.0  # no single dependency may hold the command up longer


async def run_checks(cli_config: Path | None) -> list[Finding]:
    environment = Environment()
    config: AppConfig | None = None
    tools: Tools | None = None
    path = config_path(cli_config, environment)
    try:
        config, environment, tools = load(cli_config)
        found = [ok("config", f"{path} is valid" if path else "no config file: using the defaults")]
    except ConfigError as exc:
        found = [fail("config", str(exc))]
    found += _environment(environment, config)
    if config is not None:
        found += check_oauth(config, environment)

    checks: list[tuple[str, Awaitable[list[Finding]]]] = [
        (
            "redis",
            check_redis(
                _secret(environment.redis_url),
                _require_persistence(config),
                cluster=bool(config and config.redis.cluster),
                replica_acks=config.redis.replica_acks if config else None,
            ),
        )
    ]
    base_url = environment.openai_base_url or (config.llm.base_url if config else None)
    key = _secret(environment.openai_api_key)
    if config is None:
        found.append(skip("llm", "not checked: the config did not load"))
    elif key is None and base_url is None:
        found.append(skip("llm", "not checked: OPENAI_API_KEY is not set"))
    else:
        checks.append(("llm", check_model(base_url, key, config.llm.model)))
    bot_token = _secret(environment.slack_bot_token)
    if bot_token is None:
        found.append(skip("slack", "not checked: SLACK_BOT_TOKEN is not set"))
    else:
        checks.append(("slack", check_slack(environment.slack_api_url, bot_token)))
    checks.append(
        (
            "socket mode",
            check_socket_mode(environment.slack_api_url, _secret(environment.slack_app_token)),
        )
    )
    if tools is not None:
        checks.append(("mcp", check_mcp(tools)))
    try:
        results = await asyncio.gather(*(_limited(area, check) for area, check in checks))
        for result in results:
            found += result
        if tools is not None:  # once the MCP servers have listed their tools
            found += [warn("roles", pattern) for pattern in tools.unmatched_patterns()]
            found += [warn("channels", name) for name in tools.unmatched_channel_names()]
    finally:
        if tools is not None:
            await tools.aclose()
    return found


def _environment(environment: Environment, config: AppConfig | None) -> list[Finding]:
    missing = missing_settings(environment, config, "run")
    found = [fail("environment", str(m)) for m in missing]
    found += [warn("environment", p) for p in token_shape_problems(environment)]
    if not missing:
        mode = (
            "Socket Mode (SLACK_APP_TOKEN is set)"
            if socket_mode(environment)
            else "HTTP mode (SLACK_APP_TOKEN is not set)"
        )
        found.insert(0, ok("environment", f"every required variable is set for {mode}"))
    return found


async def _limited(area: str, check: Awaitable[list[Finding]]) -> list[Finding]:
    try:
        async with asyncio.timeout(LIMIT_S):
            return await check
    except TimeoutError:
        return [fail(area, f"no answer within {LIMIT_S:.0f} s")]


def _require_persistence(config: AppConfig | None) -> bool:
    return config.redis.require_persistence if config else False


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


async def check_command(cli_config: Path | None, as_json: bool) -> int:
    """``slack-agent check``: print the findings (every secret known replaced, also when
    the config did not load); exit 1 on any problem."""
    findings = await run_checks(cli_config)
    print_redacted(json_report(findings) if as_json else as_text(findings))
    return exit_code(findings)
