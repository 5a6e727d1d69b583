"""Configuration: the YAML file (roles, tools, LLM settings) and the environment (secrets).

:class:`ConfigError` is light; the other names are loaded on first use. The schema pulls
in pydantic and the openai SDK (about a second of start-up), and a worker process must
hold on to its supervisor's lifeline before it loads them (bot/process/lifeline.py)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bot.config.errors import ConfigError

if TYPE_CHECKING:
    from bot.config.environment import Environment
    from bot.config.loading import load_config, parse_config
    from bot.config.schema import AppConfig, LLMConfig
    from permissions.config import RoleConfig

__all__ = [
    "AppConfig",
    "ConfigError",
    "Environment",
    "LLMConfig",
    "RoleConfig",
    "load_config",
    "parse_config",
]

_HOMES = {
    "AppConfig": "bot.config.schema",
    "Environment": "bot.config.environment",
    "LLMConfig": "bot.config.schema",
    "RoleConfig": "permissions.config",
    "load_config": "bot.config.loading",
    "parse_config": "bot.config.loading",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
