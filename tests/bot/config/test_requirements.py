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
