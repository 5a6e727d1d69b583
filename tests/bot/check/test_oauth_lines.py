"""`slack-agent check`'s lines about per-person sign-in that need no network: the callback,
an http:// base URL, Socket Mode's public --port, and Redis that may forget connections."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from bot.check.findings import fail, ok, warn
from bot.check.oauth import check_oauth
from bot.config.environment import Environment
from bot.config.schema import AppConfig
from bot.oauth.crypto import key_id
from tests.bot.check.test_check_command import check, lines
from tests.fakes.redis_server import free_port

SOCKET_MODE = (
    "Socket Mode: --port now serves the sign-in callback publicly, and /metrics with it; give "
    "--metrics-port"
)
FORGETS = "redis.require_persistence is off: a Redis restart forgets every connection"


def signing_in(base_url: str = "https://bot.example.com", **sections: dict[str, Any]) -> AppConfig:
    return AppConfig.model_validate(
        {
            "oauth": {"redirect_base_url": base_url},
            "mcp": {"servers": {"linear": {"url": "https://mcp.linear.app/mcp", "auth": "oauth"}}},
            **sections,
        }
    )


@pytest.fixture
def http_mode(monkeypatch: pytest.MonkeyPatch) -> Environment:
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    return Environment()


def test_the_callback_and_what_forgets_connections(http_mode: Environment) -> None:
    assert check_oauth(signing_in(), http_mode) == [
        ok("oauth", "callback https://bot.example.com/oauth/callback"),
        warn("oauth", FORGETS),
    ]


def test_nothing_is_said_without_a_server_that_signs_people_in(http_mode: Environment) -> None:
    plain = AppConfig.model_validate(
        {
            "oauth": {"redirect_base_url": "https://bot.example.com"},
            "mcp": {"servers": {"files": {"command": "npx"}}},
        }
    )
    assert check_oauth(plain, http_mode) == []
    assert check_oauth(AppConfig(), Environment(slack_app_token="xapp-1")) == []


def test_persistent_redis_an_http_base_url_and_socket_mode() -> None:
    persistent = {"require_persistence": True}
    assert check_oauth(signing_in(redis=persistent), Environment(slack_app_token=None)) == [
        ok("oauth", "callback https://bot.example.com/oauth/callback")
    ]
    found = check_oauth(
        signing_in("http://localhost:3000/", redis=persistent),
        Environment(slack_app_token="xapp-1"),
    )
    assert found == [
        ok("oauth", "callback http://localhost:3000/oauth/callback"),
        warn("oauth", "redirect_base_url is http://: only localhost callbacks work so"),
        warn("oauth", SOCKET_MODE),
    ]
    assert [f.line for f in found][1] == (
        "[warn] oauth: redirect_base_url is http://: only localhost callbacks work so"
    )


async def test_slack_agent_check_shows_them(tmp_path: Path) -> None:
    """The lines are part of `slack-agent check`, beside the missing key's."""
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: every network check fails
    config = tmp_path / "agent.yaml"
    config.write_text(
        "llm: {model: fake-model}\n"
        "oauth: {redirect_base_url: 'http://127.0.0.1:3000'}\n"
        "mcp: {servers: {linear: {auth: oauth, connect_timeout_s: 1, "
        f"url: '{closed}/mcp'}}}}}}\n"
    )
    env = {"OPENAI_API_KEY": "sk-check", "SLACK_APP_TOKEN": "xapp-1", "SLACK_API_URL": closed}
    code, checks, err = await check("--config", str(config), env=env)
    assert code == 1, err
    warned = lines(checks, "warn")
    assert [line for line in lines(checks, "ok") if line.startswith("oauth: ")] == [
        "oauth: callback http://127.0.0.1:3000/oauth/callback"
    ]
    assert [line for line in warned if line.startswith("oauth: ")] == [
        "oauth: redirect_base_url is http://: only localhost callbacks work so",
        f"oauth: {SOCKET_MODE}",
        f"oauth: {FORGETS}",
    ]
    assert (
        "environment: SLACK_AGENT_SECRET_KEY is not set: mcp.servers.linear has auth: oauth: "
        in "\n".join(lines(checks, "fail"))
    )


def test_the_secret_key_named_by_its_id_or_what_is_wrong_with_it(http_mode: Environment) -> None:
    key = bytes(range(32))
    good = Environment(slack_agent_secret_key=base64.b64encode(key).decode())
    assert check_oauth(signing_in(), good)[0] == ok(
        "oauth", f"SLACK_AGENT_SECRET_KEY holds 32 bytes (key id {key_id(key)})"
    )
    short = Environment(slack_agent_secret_key=base64.b64encode(key[:16]).decode())
    assert check_oauth(signing_in(), short)[0] == fail(
        "oauth", "SLACK_AGENT_SECRET_KEY decodes to 16 bytes, needs 32"
    )
    bad_previous = Environment(
        slack_agent_secret_key=base64.b64encode(key).decode(),
        slack_agent_secret_key_previous="not base64!",
    )
    [line] = [f for f in check_oauth(signing_in(), bad_previous) if f.status == "fail"]
    assert "SLACK_AGENT_SECRET_KEY_PREVIOUS is not base64" in line.line
    # Nothing when no server signs people in; unset, the environment's line says it.
    assert check_oauth(AppConfig(), good) == []
    assert all("SECRET_KEY" not in f.line for f in check_oauth(signing_in(), http_mode))
