"""agent.example.yaml, the file docker-compose mounts, is a config the bot starts with, and
it has the safety features in it: roles, an approval rule, budgets, and an MCP server to
uncomment."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.process.services import load

EXAMPLE = Path(__file__).resolve().parents[3] / "agent.example.yaml"


def test_the_example_starts_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_AGENT_CONFIG", raising=False)
    config, _, tools = load(EXAMPLE)
    assert config.roles and any(role.admin for role in config.roles.values())
    assert config.approval.tools
    assert config.budgets.workspace is not None
    assert any(role.budget for role in config.roles.values())
    assert {"get_time", "calculate"} <= set(tools.registry.fixed_names())
