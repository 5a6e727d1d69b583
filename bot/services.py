"""Build the parts a process needs from the config file and the environment, once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.agent.loop import LoopSettings
from bot.config import AppConfig, ConfigError, Environment, load_config
from bot.llm.client import OpenAIChatModel
from bot.llm.pricing import price_for
from bot.state.store import State, open_state
from permissions.policy import Policy
from permissions.resolver import RoleResolver
from permissions.validation import role_errors
from tools.errors import ToolDefinitionError
from tools.registry import ToolRegistry, build_registry


@dataclass
class Services:
    config: AppConfig
    environment: Environment
    registry: ToolRegistry
    model: OpenAIChatModel
    loop_settings: LoopSettings
    state: State
    policy: Policy

    async def aclose(self) -> None:
        await self.model.aclose()
        await self.state.aclose()


def config_path(cli_value: Path | None, environment: Environment) -> Path | None:
    """``--config`` wins over ``SLACK_AGENT_CONFIG``; neither means the defaults."""
    return cli_value or environment.slack_agent_config


def loop_settings(config: AppConfig) -> LoopSettings:
    return LoopSettings(
        system_prompt=config.system_prompt,
        max_rounds=config.llm.max_rounds,
        tool_timeout_s=config.llm.tool_timeout_s,
        tool_output_chars=config.llm.tool_output_chars,
        price=price_for(config.llm.model, config.llm.prices),
    )


def load(cli_config: Path | None = None) -> tuple[AppConfig, Environment, ToolRegistry]:
    """The config, the environment and the tool registry, all validated."""
    environment = Environment()
    config = load_config(config_path(cli_config, environment))
    try:
        registry = build_registry(config.tools)
    except ToolDefinitionError as exc:
        raise ConfigError(str(exc)) from None
    problems = role_errors(config.roles, registry.names())
    if problems:
        raise ConfigError("invalid roles\n" + "\n".join(f"  {p}" for p in problems))
    return config, environment, registry


def build_services(cli_config: Path | None = None) -> Services:
    """Everything validated up front; any problem is a :class:`ConfigError` naming the key."""
    config, environment, registry = load(cli_config)
    base_url = environment.openai_base_url or config.llm.base_url
    api_key = environment.openai_api_key.get_secret_value() if environment.openai_api_key else None
    if not api_key and not base_url:
        raise ConfigError(
            "OPENAI_API_KEY is not set. Set it, or set OPENAI_BASE_URL (or llm.base_url) "
            "to a server that needs no key."
        )
    model = OpenAIChatModel(config.llm, api_key=api_key, base_url=base_url)
    redis_url = environment.redis_url.get_secret_value() if environment.redis_url else None
    state = open_state(redis_url, config)
    # The Slack directory (user groups, workspace admins) is added by the Slack service.
    resolver = RoleResolver(config.roles, grants=state.grants, cache=state.cache)
    policy = Policy(config.roles, resolver, state.switches)
    return Services(config, environment, registry, model, loop_settings(config), state, policy)
