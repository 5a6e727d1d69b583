"""Built-in tools: useful, safe, and each switched on by config."""

from __future__ import annotations

from collections.abc import Mapping

from tools.builtin.calculator import calculate
from tools.builtin.clock import get_time
from tools.builtin.web_fetch import make_fetch_url
from tools.config import ToolsConfig
from tools.definition import Tool


def builtin_tools(config: ToolsConfig, provided: Mapping[str, Tool] | None = None) -> list[Tool]:
    """The built-ins ``config`` enables, in a stable order; ``provided``: the built-ins the
    process makes itself (the bot's ``schedule``), each left out when it provides none."""
    made: dict[str, Tool] = {"get_time": get_time, "calculate": calculate, **(provided or {})}
    enabled = config.enabled_builtins()
    if "fetch_url" in enabled:
        made["fetch_url"] = make_fetch_url(config.fetch_url)
    return [made[name] for name in enabled if name in made]


__all__ = ["builtin_tools", "calculate", "get_time", "make_fetch_url"]
