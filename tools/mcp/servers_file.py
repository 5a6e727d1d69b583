"""``mcp.servers_file``: the MCP servers of another client's JSON file, read as they are.

Claude Desktop and Cursor keep them under ``mcpServers``; VS Code under ``servers``
(``.vscode/mcp.json``) or ``mcp.servers`` (settings.json), with ``//`` comments and
trailing commas allowed. Each entry's ``command``/``args``/``env``/``cwd``, or
``url``/``headers`` with ``type`` (``stdio``, ``http``, ``sse``) is taken; ``${NAME}`` and
``${env:NAME}`` come from the environment. An entry with ``"disabled": true`` is skipped;
keys only other clients use are ignored with a warning.

A server of the same name under ``mcp.servers`` in the YAML config overrides what it sets
(a ``prefix``, ``allow``, ``sampling``, timeouts, ...).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tools.mcp.config import McpConfig, McpServerConfig, oauth_problem, substitute

log = logging.getLogger(__name__)

# What the file may say, and the key it has in our config.
_TAKEN = ("command", "args", "env", "cwd", "url", "headers", "type", "transport", "approval")


class ServersFileError(ValueError):
    """The servers file cannot be used; the message names the file and the entry."""


def servers_file_path(setting: str, base: Path | None) -> Path:
    """Where ``mcp.servers_file`` points: ``${NAME}`` and ``~`` expanded, relative to the
    config file's folder (``base``)."""
    try:
        expanded = Path(os.path.expanduser(substitute(setting)))
    except ValueError as exc:
        raise ServersFileError(f"mcp.servers_file: {exc}") from None
    if not expanded.is_absolute() and base is not None:
        expanded = base / expanded
    return expanded


def read_servers_file(path: Path) -> dict[str, McpServerConfig]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ServersFileError(
            f"mcp.servers_file: cannot read {path} ({exc.strerror or exc})"
        ) from None
    return parse_servers(text, str(path))


def parse_servers(text: str, origin: str) -> dict[str, McpServerConfig]:
    """The servers a JSON (or JSONC) file of another MCP client lists (pure)."""
    try:
        data = json.loads(without_comments(text))
    except json.JSONDecodeError as exc:
        raise ServersFileError(
            f"{origin}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    entries, where = _entries(data)
    if entries is None:
        raise ServersFileError(
            f"{origin}: found no servers (expected `mcpServers`, `servers` or `mcp.servers`)"
        )
    servers: dict[str, McpServerConfig] = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            raise ServersFileError(f"{origin}: {where}.{name}: expected an object")
        if entry.get("disabled") is True:
            log.info("%s: %s.%s is disabled; skipping it", origin, where, name)
            continue
        ignored = sorted(key for key in entry if key not in _TAKEN and key != "disabled")
        if ignored:
            log.warning(
                "%s: %s.%s: ignoring %s (not used by this bot)",
                origin,
                where,
                name,
                ", ".join(ignored),
            )
        taken = {key: entry[key] for key in _TAKEN if key in entry}
        try:
            server = McpServerConfig.model_validate(taken)
        except ValidationError as exc:
            problem = exc.errors()[0]
            key = ".".join(str(part) for part in problem["loc"])
            message = str(problem["msg"]).removeprefix("Value error, ")
            prefix = f"{where}.{name}.{key}" if key else f"{where}.{name}"
            raise ServersFileError(f"{origin}: {prefix}: {message}") from None
        if not server.reachable:
            raise ServersFileError(f"{origin}: {where}.{name}: needs `command` or `url`")
        servers[name] = server
    return servers


def merge_servers(config: McpConfig, listed: dict[str, McpServerConfig]) -> McpConfig:
    """The config with the file's servers added; a YAML server of the same name overrides
    the keys it sets (pure)."""
    merged: dict[str, McpServerConfig] = dict(listed)
    for name, server in config.servers.items():
        base = listed.get(name)
        if base is None:
            if not server.reachable:
                raise ServersFileError(
                    f"mcp.servers.{name}: give either `command` (stdio) or `url` (HTTP); "
                    "no server of that name is in mcp.servers_file"
                )
            merged[name] = server
            continue
        changes = {key: getattr(server, key) for key in server.model_fields_set}
        merged[name] = base.model_copy(update=changes)
        # auth: oauth comes from the YAML only; the file's entry may be stdio, SSE or carry
        # an Authorization header, which signing each person in rules out.
        problem = oauth_problem(merged[name])
        if problem is not None:
            raise ServersFileError(f"mcp.servers.{name}: {problem}")
    return config.model_copy(update={"servers": merged})


def without_comments(text: str) -> str:
    """JSONC to JSON: ``//`` and ``/* */`` comments and trailing commas removed (outside
    strings)."""
    return _without_trailing_commas(_without_comment_text(text))


def _without_comment_text(text: str) -> str:
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        if text[index] == '"':
            end = _string_end(text, index)
            out.append(text[index:end])
            index = end
        elif text.startswith("//", index):
            end = text.find("\n", index)
            index = length if end == -1 else end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            index = length if end == -1 else end + 2
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def _without_trailing_commas(text: str) -> str:
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = _string_end(text, index)
            out.append(text[index:end])
            index = end
            continue
        if char == ",":
            rest = index + 1
            while rest < length and text[rest] in " \t\r\n":
                rest += 1
            if rest < length and text[rest] in "}]":
                index += 1
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    """The index just past the JSON string that starts at ``start``."""
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
        elif text[index] == '"':
            return index + 1
        else:
            index += 1
    return len(text)


def _entries(data: Any) -> tuple[dict[str, Any] | None, str]:
    if not isinstance(data, dict):
        return None, ""
    for key in ("mcpServers", "servers"):
        if isinstance(data.get(key), dict):
            return data[key], key
    nested = data.get("mcp")
    if isinstance(nested, dict) and isinstance(nested.get("servers"), dict):
        return nested["servers"], "mcp.servers"
    return None, ""
