"""Every secret the configuration holds, for the redactor (bot/observability/redaction.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bot.config.environment import Environment
from bot.config.schema import AppConfig
from tools.mcp.config import EnvironmentVariableMissing, McpServerConfig, substitute, substituted

# OTLP exporter headers ("authorization=Bearer%20...,x-key=..."), read by the exporter.
OTLP_HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
OTLP_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
CREDENTIAL_SCHEMES = ("bearer", "basic", "token")


def configured_secrets(
    environment: Environment,
    config: AppConfig | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """Slack's tokens and signing secret, the OpenAI key, the keys people's tokens are
    sealed with (``SLACK_AGENT_SECRET_KEY`` and ``..._PREVIOUS``), the password of every URL
    (``REDIS_URL``, ``OPENAI_BASE_URL``, ``SLACK_API_URL``, the OTLP endpoint, ``llm.base_url``,
    each MCP server's ``url``), the OTLP exporter's header values; with ``config``, every
    value ``${NAME}`` substitution puts anywhere in the MCP servers (``url``, ``args``,
    ``command``, ``cwd``, ``headers``, ``env``, ``oauth.client_id``, ``oauth.client_secret``,
    ``mcp.servers_file``), each header's and env's whole value (``Bearer <token>`` gives its
    token too) and each pre-registered client's whole secret."""
    environ = os.environ if environ is None else environ
    found = list(_environment_secrets(environment, environ))
    if config is not None:
        found += _config_secrets(config)
    return [value for value in found if value]


def named_in_file(path: Path | None) -> list[str]:
    """The values of the variables a config file names as ``${NAME}``: what is known of its
    secrets when it cannot be loaded."""
    if path is None:
        return []
    try:
        return substituted(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def url_password(url: str | None) -> str | None:
    if not url:
        return None
    try:
        password = urlsplit(url.strip()).password
    except ValueError:
        return None
    return unquote(password) if password else None


def _environment_secrets(environment: Environment, environ: Mapping[str, str]) -> Iterator[str]:
    for secret in (
        environment.slack_bot_token,
        environment.slack_signing_secret,
        environment.slack_app_token,
        environment.openai_api_key,
        environment.slack_agent_secret_key,
        environment.slack_agent_secret_key_previous,
    ):
        if secret is not None:
            yield secret.get_secret_value()
    redis_url = environment.redis_url.get_secret_value() if environment.redis_url else None
    endpoints = [environ.get(name) for name in OTLP_ENDPOINT_VARIABLES]
    for url in (redis_url, environment.openai_base_url, environment.slack_api_url, *endpoints):
        password = url_password(url)
        if password:
            yield password
    for name in OTLP_HEADER_VARIABLES:
        for pair in environ.get(name, "").split(","):
            _, _, value = pair.partition("=")
            yield from _header_value(unquote(value).strip())


def _config_secrets(config: AppConfig) -> Iterator[str]:
    for url in (config.llm.base_url, config.telemetry.otlp_endpoint):
        password = url_password(url)
        if password:
            yield password
    if config.mcp.servers_file is not None:
        yield from substituted(config.mcp.servers_file)
    for server in config.mcp.servers.values():
        yield from _server_secrets(server)


def _server_secrets(server: McpServerConfig) -> Iterator[str]:
    yield from server.substitutions()
    for value in (*server.headers.values(), *server.env.values()):
        try:
            yield from _header_value(substitute(value))
        except EnvironmentVariableMissing:
            continue
    if server.oauth is not None and server.oauth.client_secret is not None:
        try:
            client_secret: str | None = substitute(server.oauth.client_secret)
        except EnvironmentVariableMissing:
            client_secret = None
        if client_secret:
            yield client_secret
    if server.url is not None:
        try:
            password = url_password(substitute(server.url))
        except EnvironmentVariableMissing:
            password = None
        if password:
            yield password


def _header_value(text: str) -> Iterator[str]:
    """A header's (or variable's) value, and the credential of ``Bearer <token>``."""
    if not text:
        return
    yield text
    scheme, _, credential = text.partition(" ")
    if credential and scheme.lower() in CREDENTIAL_SCHEMES:
        yield credential.strip()
