"""agent.example.yaml, the file docker-compose mounts, is a config the bot starts with, and
it has the safety features in it: roles, an approval rule, budgets, and an MCP server to
uncomment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


def test_its_mcp_server_is_a_valid_entry_once_uncommented() -> None:
    text = EXAMPLE.read_text()
    block = re.search(r"^# mcp:\n(?:#  .*\n)+", text, re.M)
    assert block is not None, "the example shows one MCP server, commented"
    uncommented = re.sub(r"^# ", "", block.group(0), flags=re.M)
    config = parse_config(text.replace(block.group(0), uncommented), "agent.example.yaml")
    (server,) = config.mcp.servers.values()
    assert server.command == "npx"
