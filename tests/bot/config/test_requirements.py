"""Which environment variables each command needs (pure)."""

from __future__ import annotations

import pytest

from bot.config.environment import Environment
from bot.config.requirements import Command, missing_message, missing_settings, token_shape_problems
from bot.config.schema import AppConfig

NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*NAMES, "SLACK_APP_TOKEN", "SLACK_AGENT_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def names(command: Command, config: AppConfig | None = None) -> list[str]:
    return [m.name for m in missing_settings(Environment(), config, command)]


def test_http_mode_needs_all_three(monkeypatch: pytest.MonkeyPatch) -> None:
    assert names("run") == ["OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"]
    assert names("worker") == ["OPENAI_API_KEY", "SLACK_BOT_TOKEN"]
    assert names("chat") == ["OPENAI_API_KEY"]
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1")  # Socket Mode: no signing secret
    assert names("run") == ["OPENAI_API_KEY", "SLACK_BOT_TOKEN"]


def test_a_base_url_stands_in_for_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with_url = AppConfig.model_validate({"llm": {"base_url": "http://127.0.0.1:11434/v1"}})
    assert "OPENAI_API_KEY" not in names("chat", with_url)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert names("chat") == []


def test_an_empty_variable_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "")
    assert "SLACK_BOT_TOKEN" in names("worker")


def test_one_message_names_them_all() -> None:
    message = missing_message(missing_settings(Environment(), None, "run"))
    assert message.splitlines()[0] == "3 required settings are missing:"
    assert message.splitlines()[3].startswith("  SLACK_SIGNING_SECRET is not set: HTTP mode")


def test_tokens_of_the_wrong_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xapp-1-A")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xoxb-1")
    assert token_shape_problems(Environment()) == [
        "SLACK_BOT_TOKEN does not start with xoxb- (is it the bot token?)",
        "SLACK_APP_TOKEN does not start with xapp- (is it the app-level token?)",
    ]


def test_oauth_needs_the_secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command that makes tool calls stops without the key people's tokens are sealed
    with, naming the servers that sign people in and how to make a key."""
    monkeypatch.delenv("SLACK_AGENT_SECRET_KEY", raising=False)
    for name, value in (("OPENAI_API_KEY", "k"), ("SLACK_BOT_TOKEN", "xoxb-1")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    signing_in = AppConfig.model_validate(
        {
            "oauth": {"redirect_base_url": "https://bot.example.com"},
            "mcp": {
                "servers": {
                    "files": {"command": "npx"},
                    "linear": {"url": "https://mcp.linear.app/mcp", "auth": "oauth"},
                }
            },
        }
    )
    plain = AppConfig.model_validate({"mcp": {"servers": {"files": {"command": "npx"}}}})
    commands: tuple[Command, ...] = ("run", "worker", "chat")
    for command in commands:
        found = missing_settings(Environment(), signing_in, command)
        assert [str(m) for m in found] == [
            "SLACK_AGENT_SECRET_KEY is not set: mcp.servers.linear has auth: oauth: people's "
            "tokens are stored encrypted with it (base64 of 32 random bytes: openssl rand "
            "-base64 32)"
        ], command
        assert names(command, plain) == []
        assert names(command, None) == []
    assert missing_message(missing_settings(Environment(), signing_in, "run")).startswith(
        "1 required setting is missing:\n  SLACK_AGENT_SECRET_KEY is not set: "
    )
    two = signing_in.model_copy(deep=True)
    two.mcp.servers["slack"] = two.mcp.servers["linear"].model_copy()
    (both,) = missing_settings(Environment(), two, "chat")
    assert both.why.startswith("mcp.servers.linear, mcp.servers.slack have auth: oauth: ")
    monkeypatch.setenv("SLACK_AGENT_SECRET_KEY", "a2V5")
    for command in commands:
        assert names(command, signing_in) == []
