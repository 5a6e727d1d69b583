"""Every secret the configuration holds, for the log redactor."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from bot.config.environment import Environment
from bot.config.schema import AppConfig
from tools.mcp.config import EnvironmentVariableMissing, substitute


def configured_secrets(environment: Environment, config: AppConfig) -> list[str]:
    """Slack's tokens and signing secret, the OpenAI key, Redis's password, and the values
    of every MCP server's headers and environment (after ``${NAME}`` substitution; a header
    like ``Bearer <token>`` gives its token too)."""
    return [value for value in _secrets(environment, config) if value]


def _secrets(environment: Environment, config: AppConfig) -> Iterator[str]:
    for secret in (
        environment.slack_bot_token,
        environment.slack_signing_secret,
        environment.slack_app_token,
        environment.openai_api_key,
    ):
        if secret is not None:
            yield secret.get_secret_value()
    if environment.redis_url is not None:
        try:
            password = urlsplit(environment.redis_url.get_secret_value()).password
        except ValueError:
            password = None
        if password:
            yield password
    for server in config.mcp.servers.values():
        for value in (*server.headers.values(), *server.env.values()):
            try:
                text = substitute(value)
            except EnvironmentVariableMissing:
                continue
            yield text
            scheme, _, credential = text.partition(" ")
            if credential and scheme.lower() in ("bearer", "basic", "token"):
                yield credential.strip()
