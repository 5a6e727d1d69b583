"""`mcp.servers_file`: Claude Desktop, Cursor and VS Code server lists, read as they are."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tools.mcp.config import McpConfig, McpServerConfig
from tools.mcp.servers_file import (
    ServersFileError,
    merge_servers,
    parse_servers,
    servers_file_path,
    without_comments,
)

CLAUDE_DESKTOP = """
{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=${TZ_NAME}"]},
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    },
    "old": {"command": "old-server", "disabled": true},
    "remote": {"url": "https://mcp.example.com/sse", "headers": {"X-Key": "${env:GITHUB_TOKEN}"}}
  }
}
"""

VS_CODE = """
// .vscode/mcp.json
{
  "servers": {
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"],},
    /* legacy server */
    "legacy": {"type": "sse", "url": "http://127.0.0.1:8000/sse", "alwaysAllow": ["x"]},
    "api": {"type": "http", "url": "http://127.0.0.1:9000/mcp"},
  },
  "inputs": [],
}
"""


def test_claude_desktop_and_cursor_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ_NAME", "Europe/Berlin")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-1")
    servers = parse_servers(CLAUDE_DESKTOP, "claude_desktop_config.json")
    assert sorted(servers) == ["github", "remote", "time"]  # the disabled one is skipped
    assert servers["time"].kind == "stdio"
    assert servers["time"].args == ["mcp-server-time", "--local-timezone=${TZ_NAME}"]
    assert servers["github"].env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    # A URL with no type: streamable HTTP first, SSE if that is refused.
    assert servers["remote"].transport is None and servers["remote"].kind == "streamable_http"


def test_vs_code_files_with_comments_trailing_commas_and_types(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    servers = parse_servers(VS_CODE, "mcp.json")
    assert {name: s.kind for name, s in servers.items()} == {
        "fetch": "stdio",
        "legacy": "sse",
        "api": "streamable_http",
    }
    assert "mcp.json: servers.legacy: ignoring alwaysAllow (not used by this bot)" in caplog.text
    settings = '{"mcp": {"servers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}}'
    assert list(parse_servers(settings, "settings.json")) == ["git"]


def test_comments_and_commas_inside_strings_stay() -> None:
    text = '{"a": "http://x//y, }", /* c */ "b": [1, 2,], // end\n}'
    assert without_comments(text) == '{"a": "http://x//y, }",  "b": [1, 2] \n}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", "f.json: not valid JSON at line 1, column 2"),
        ('{"other": {}}', "f.json: found no servers (expected `mcpServers`, `servers`"),
        ('{"mcpServers": {"x": 3}}', "f.json: mcpServers.x: expected an object"),
        ('{"mcpServers": {"x": {"env": {}}}}', "f.json: mcpServers.x: needs `command` or `url`"),
        (
            '{"mcpServers": {"x": {"command": "a", "env": {"K": "${SURELY_UNSET_VARIABLE}"}}}}',
            "f.json: mcpServers.x: env.K: ${SURELY_UNSET_VARIABLE} is not set in the environment",
        ),
        (
            '{"servers": {"x": {"type": "websocket", "url": "ws://a"}}}',
            "f.json: servers.x.type: unknown transport 'websocket'",
        ),
        (
            '{"servers": {"x": {"command": "a", "args": ["${input:key}"]}}}',
            "f.json: servers.x: args[0]: ${input:key} cannot be filled in here",
        ),
    ],
)
def test_problems_name_the_file_and_the_entry(text: str, expected: str) -> None:
    with pytest.raises(ServersFileError) as caught:
        parse_servers(text, "f.json")
    assert str(caught.value).startswith(expected)


def test_the_yaml_config_overrides_what_it_sets() -> None:
    listed = parse_servers('{"mcpServers": {"time": {"command": "uvx"}}}', "f.json")
    config = McpConfig.model_validate(
        {
            "servers_file": "f.json",
            "servers": {
                "time": {"prefix": "time_", "sampling": True},
                "mine": {"command": "my-server"},
            },
        }
    )
    merged = merge_servers(config, listed).servers
    assert merged["time"].command == "uvx" and merged["time"].prefix == "time_"
    assert merged["time"].sampling and merged["time"].call_timeout_s == 30
    assert merged["mine"] == McpServerConfig(command="my-server")
    stray = McpConfig.model_validate(
        {"servers_file": "f.json", "servers": {"typo": {"prefix": "t_"}}}
    )
    with pytest.raises(ServersFileError, match=r"mcp\.servers\.typo: give either `command`"):
        merge_servers(stray, listed)


def test_the_path_is_relative_to_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLIENT_DIR", "/etc/clients")
    assert servers_file_path("servers.json", tmp_path) == tmp_path / "servers.json"
    assert servers_file_path("${CLIENT_DIR}/mcp.json", tmp_path) == Path("/etc/clients/mcp.json")
    assert servers_file_path("~/mcp.json", tmp_path) == Path.home() / "mcp.json"


def test_an_entry_may_say_which_of_its_tools_need_approval() -> None:
    text = (
        '{"mcpServers": {"fs": {"command": "fs-server", "approval": "always"},'
        ' "time": {"command": "time-server"}}}'
    )
    servers = parse_servers(text, "claude.json")
    assert servers["fs"].approval == "always" and servers["time"].approval == "writes"
    with pytest.raises(ServersFileError, match=r"mcpServers\.fs\.approval"):
        parse_servers('{"mcpServers": {"fs": {"command": "x", "approval": "sometimes"}}}', "f")
