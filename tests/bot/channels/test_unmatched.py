"""A channel entry's tool glob that matches no tool, or server name that is no configured MCP
server, is a warning: from the pure check, in the start-up log, never a stop (`slack-agent
check` shows them too: tests/bot/check/test_check_command.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.channels.config import ChannelEntry
from bot.channels.unmatched import unmatched_names
from bot.process.services import load

TOOLS = ["get_time", "calculate"]


def test_globs_and_servers_that_match_nothing_are_named_by_key_path() -> None:
    channels = {
        "C0SUPPORT": ChannelEntry(
            tools=["get_*", "search_*", "!deploy_*"], mcp_servers=["zendesk", "wiki*"]
        ),
        "*": ChannelEntry(tools=["calculate"]),
    }
    assert unmatched_names(channels, TOOLS, ["wiki"]) == [
        "channels.C0SUPPORT.tools[1]: 'search_*' matches no tool (tools: calculate, get_time); "
        "it lets through nothing",
        "channels.C0SUPPORT.tools[2]: '!deploy_*' matches no tool (tools: calculate, "
        "get_time); it denies nothing",
        "channels.C0SUPPORT.mcp_servers[0]: 'zendesk' is no configured MCP server (servers: "
        "wiki); no tool comes from it",
    ]


def test_nothing_to_say_about_entries_that_set_neither() -> None:
    assert unmatched_names({"C0X": ChannelEntry(memory=True)}, [], []) == []
    assert unmatched_names({}, TOOLS, []) == []


async def test_start_up_logs_them_as_warnings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "tools: {builtins: [get_time]}\n"
        "channels: {C0SUPPORT: {tools: [get_time, search_*], mcp_servers: [zendesk]}}\n"
    )
    _, _, tools = load(path)
    caplog.set_level(logging.WARNING, logger="bot.process.services")
    try:
        await tools.start()
    finally:
        await tools.aclose()
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert logged == [
        "channels.C0SUPPORT.tools[1]: 'search_*' matches no tool (tools: get_time); it lets "
        "through nothing",
        "channels.C0SUPPORT.mcp_servers[0]: 'zendesk' is no configured MCP server (servers: "
        "none); no tool comes from it",
    ]
