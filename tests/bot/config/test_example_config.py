"""agent.example.yaml, the file docker-compose mounts, is a config the bot starts with, and
it has the safety features in it: roles, an approval rule, budgets, and an MCP server and a
channel entry to uncomment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config.errors import ConfigError
from bot.config.loading import parse_config
from bot.process.services import load

EXAMPLE = Path(__file__).resolve().parents[3] / "agent.example.yaml"


def test_the_example_starts_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_AGENT_CONFIG", raising=False)
    config, _, tools = load(EXAMPLE)
    assert config.roles and any(role.admin for role in config.roles.values())
    assert config.approval.tools
    assert config.budgets.workspace is not None
    assert any(role.budget for role in config.roles.values())
    assert {"get_time", "calculate"} <= set(tools.registry.names())


def uncommented(text: str, key: str) -> str:
    """``text`` with the commented block that starts ``# key:`` uncommented."""
    block = re.search(rf"^# {key}:\n(?:#  .*\n)+", text, re.M)
    assert block is not None, f"the example shows a commented {key}: section"
    return text.replace(block.group(0), re.sub(r"^# ", "", block.group(0), flags=re.M))


def test_its_mcp_servers_are_valid_entries_once_uncommented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLACK_MCP_CLIENT_ID", "1234.5678")
    monkeypatch.setenv("SLACK_MCP_CLIENT_SECRET", "example-client-secret")
    text = uncommented(uncommented(EXAMPLE.read_text(), "mcp"), "oauth")
    config = parse_config(text, "agent.example.yaml")
    files, slack, linear = (config.mcp.servers[name] for name in ("files", "slack", "linear"))
    assert files.command == "npx" and files.auth == "none"
    # Slack's server with a client registered beforehand; Linear's registers itself.
    assert (slack.auth, slack.kind, slack.may_use_sse) == ("oauth", "streamable_http", False)
    assert slack.oauth is not None and slack.oauth.scopes == ["search:read"]
    assert slack.oauth.auth_method == "client_secret_basic"
    assert "example-client-secret" in slack.substitutions()
    assert (linear.auth, linear.oauth) == ("oauth", None)
    assert config.oauth.callback_url == "https://bot.example.com/oauth/callback"


def test_the_sign_in_servers_need_the_oauth_section(monkeypatch: pytest.MonkeyPatch) -> None:
    """Uncommenting the servers alone stops start-up naming the key to set."""
    monkeypatch.setenv("SLACK_MCP_CLIENT_ID", "1234.5678")
    monkeypatch.setenv("SLACK_MCP_CLIENT_SECRET", "example-client-secret")
    text = uncommented(EXAMPLE.read_text(), "mcp")
    with pytest.raises(ConfigError, match=r"oauth\.redirect_base_url is not set"):
        parse_config(text, "agent.example.yaml")


def test_its_channel_entry_is_valid_once_uncommented(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SLACK_AGENT_CONFIG", raising=False)
    path = tmp_path / "agent.yaml"
    path.write_text(uncommented(EXAMPLE.read_text(), "channels"))
    config, _, tools = load(path)
    support = config.channels["C0SUPPORT"]
    assert support.instructions and support.memory is True
    assert support.budget is not None and support.budget.daily_tokens == 300000
    assert tools.unmatched_channel_names() == []  # its tools are the example's own
