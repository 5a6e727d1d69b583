"""Per-person sign-in (MCP servers with ``auth: oauth``), as `slack-agent check` sees it
without the network: the key people's tokens are sealed with, where people's browsers come
back, and what would expose or forget their connections. (Each server's own line, its
authorization server discovered, is in ``mcp_servers.py``.)"""

from __future__ import annotations

from bot.check.findings import Finding, fail, ok, warn
from bot.config.environment import Environment
from bot.config.errors import ConfigError
from bot.config.requirements import socket_mode
from bot.config.schema import AppConfig, oauth_servers

AREA = "oauth"


def check_oauth(config: AppConfig, environment: Environment) -> list[Finding]:
    """One line per thing worth knowing; nothing when no server signs people in."""
    if not oauth_servers(config):
        return []
    found: list[Finding] = []
    if environment.slack_agent_secret_key is not None:  # unset: the environment's line says
        found.append(_key(environment))
    callback = config.oauth.callback_url
    if callback is not None:  # the config does not load without it
        found.append(ok(AREA, f"callback {callback}"))
        if callback.startswith("http://"):
            found.append(
                warn(AREA, "redirect_base_url is http://: only localhost callbacks work so")
            )
    if socket_mode(environment):
        found.append(
            warn(
                AREA,
                "Socket Mode: --port now serves the sign-in callback publicly, and /metrics "
                "with it; give --metrics-port",
            )
        )
    if not config.redis.require_persistence:
        found.append(
            warn(
                AREA,
                "redis.require_persistence is off: a Redis restart forgets every connection",
            )
        )
    return found


def _key(environment: Environment) -> Finding:
    """The key people's tokens are sealed with: which (its id), or what is wrong with it (or
    with the previous key), never its value."""
    from bot.oauth.crypto import KEY_VARIABLE, sealer_from

    try:
        sealer = sealer_from(environment)
    except ConfigError as exc:
        return fail(AREA, str(exc))
    return ok(AREA, f"{KEY_VARIABLE} holds 32 bytes (key id {sealer.kid})")
