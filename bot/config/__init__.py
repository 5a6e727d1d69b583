"""Configuration: the YAML file (roles, tools, LLM settings) and the environment (secrets)."""

from bot.config.environment import Environment
from bot.config.loading import ConfigError, load_config, parse_config
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
