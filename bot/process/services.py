"""Build the parts a process needs from the config file and the environment, once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.agent.loop import LoopSettings
from bot.budget.budgets import Budgets
from bot.budget.config import unpriced_cost_limits
from bot.budget.estimate import CallEstimator
from bot.budget.guard import CappableChatModel
from bot.channels.unmatched import unmatched_names
from bot.config.environment import Environment
from bot.config.errors import ConfigError
from bot.config.loading import load_config
from bot.config.model_url import model_base_url
from bot.config.requirements import Command, missing_message, missing_settings
from bot.config.schema import AppConfig, oauth_servers
from bot.llm.deferred import DeferredChatModel
from bot.llm.pricing import Price, cost_of, price_for
from bot.llm.usage import Usage
from bot.observability.redaction import REDACTOR
from bot.observability.secrets import configured_secrets, named_in_file
from bot.process.state import State, open_state
from bot.schedules.tool import NAME, ScheduleTool
from bot.state.audit import AuditEntry, AuditKind
from permissions.policy import Person, Policy
from permissions.resolver import RoleResolver
from permissions.validation import role_errors, unmatched_patterns
from tools.call_context import Requester
from tools.errors import ToolDefinitionError
from tools.mcp.config import McpConfig
from tools.mcp.manager import McpManager, McpNameClash
from tools.mcp.model_sampler import ModelSampler
from tools.mcp.resource_tool import resource_tool
from tools.mcp.servers_file import (
    ServersFileError,
    merge_servers,
    read_servers_file,
    servers_file_path,
)
from tools.registry import ToolRegistry, build_registry

if TYPE_CHECKING:
    from bot.oauth.wiring import SignInStores

log = logging.getLogger(__name__)


@dataclass
class Tools:
    """The registry, and the MCP servers that feed it (connected by :meth:`start`)."""

    config: AppConfig
    registry: ToolRegistry
    mcp: McpManager
    # the `schedule` tool, in the registry; given its store and Slack with the Slack side
    schedules: ScheduleTool
    # where the servers that sign each person in find people's tokens (None: no such server);
    # bound to Redis once the process's state is open
    sign_in_stores: SignInStores | None = None

    async def start(self) -> None:
        """Connect the MCP servers (each waited for at most its connect timeout), then warn
        about role patterns and channel entries' tool globs that match no tool, and channel
        entries' servers that are none (warnings, never a stop: `slack-agent check` shows
        them too). Two servers offering one tool name is a :class:`ConfigError`."""
        if self.mcp.connections or self.mcp.personal:
            try:
                await self.mcp.start()
            except McpNameClash as exc:
                raise ConfigError(str(exc)) from None
        servers = self.mcp.connections or self.mcp.personal
        later = " (an MCP server may list it later)" if servers else ""
        for pattern in self.unmatched_patterns() + self.unmatched_channel_names():
            log.warning("%s%s", pattern, later)

    def unmatched_patterns(self) -> list[str]:
        """The roles' tool patterns that match none of the tools listed now."""
        return unmatched_patterns(self.config.roles, self.registry.names())

    def unmatched_channel_names(self) -> list[str]:
        """The channel entries' tool globs that match none of the tools listed now, and their
        server names that are no configured MCP server."""
        servers = list(self.config.mcp.servers)
        return unmatched_names(self.config.channels, self.registry.names(), servers)

    async def aclose(self) -> None:
        await self.mcp.stop()


@dataclass
class Services:
    config: AppConfig
    environment: Environment
    tools: Tools
    model: DeferredChatModel
    loop_settings: LoopSettings
    state: State
    policy: Policy
    budgets: Budgets

    @property
    def registry(self) -> ToolRegistry:
        return self.tools.registry

    async def start(self) -> None:
        await self.tools.start()

    async def aclose(self) -> None:
        await self.tools.aclose()
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


def load(
    cli_config: Path | None = None, *, console: bool = False
) -> tuple[AppConfig, Environment, Tools]:
    """The config, the environment and the tools, all validated (MCP servers not yet
    connected: call ``Tools.start``). Every secret known is kept out of every output from
    here on: the environment's at once, the config's once it loads (when it does not, the
    values of the variables its file names). ``console``: for `slack-agent chat`, whose
    sign-ins come back to its own loopback callback (``personal_wiring``)."""
    environment = Environment()
    REDACTOR.add(configured_secrets(environment))
    path = config_path(cli_config, environment)
    try:
        config = load_config(path)
        config = config.model_copy(
            update={"mcp": mcp_servers(config.mcp, path.parent if path is not None else None)}
        )
    except ConfigError:
        REDACTOR.add(named_in_file(path))
        raise
    REDACTOR.add(configured_secrets(environment, config))
    stores = None
    personal = None
    if oauth_servers(config):  # the SDK's OAuth client is loaded only for such a server
        from bot.oauth.wiring import SignInStores, personal_wiring

        stores = SignInStores()
        personal = personal_wiring(config, stores, console=console)
    mcp = McpManager(config.mcp, personal=personal)
    schedules = ScheduleTool(config.schedules, config.slack.command)
    try:
        registry = build_registry(config.tools, {NAME: schedules.tool()})
        if config.mcp.servers:
            registry.add(resource_tool(list(config.mcp.servers), mcp.read_resource))
    except ToolDefinitionError as exc:
        raise ConfigError(str(exc)) from None
    # Patterns that match no tool are warnings, once the MCP servers have listed theirs.
    problems = role_errors(config.roles)
    if problems:
        raise ConfigError("invalid roles\n" + "\n".join(f"  {p}" for p in problems))
    if price_for(config.llm.model, config.llm.prices) is None:
        channel_budgets = {key: entry.budget for key, entry in config.channels.items()}
        unpriced = unpriced_cost_limits(
            config.budgets, config.roles, config.llm.model, channel_budgets
        )
        if unpriced:
            raise ConfigError("invalid budgets\n" + "\n".join(f"  {p}" for p in unpriced))
    registry.add_source(mcp)
    return config, environment, Tools(config, registry, mcp, schedules, stores)


def mcp_servers(config: McpConfig, base: Path | None) -> McpConfig:
    """``mcp`` with the servers of ``mcp.servers_file`` added (relative to ``base``, the
    config file's folder)."""
    if config.servers_file is None:
        return config
    try:
        path = servers_file_path(config.servers_file, base)
        return merge_servers(config, read_servers_file(path))
    except ServersFileError as exc:
        raise ConfigError(str(exc)) from None


def build_services(
    cli_config: Path | None = None, command: Command = "chat", *, console: bool = False
) -> Services:
    """Everything validated up front; any problem is a :class:`ConfigError` naming the key,
    and every environment variable ``command`` needs and lacks is named in one message.
    ``console``: the process is `slack-agent chat`'s (its sign-ins come back to its own
    loopback callback)."""
    config, environment, tools = load(cli_config, console=console)
    missing = missing_settings(environment, config, command)
    if missing:
        raise ConfigError(missing_message(missing))
    base_url = model_base_url(environment.openai_base_url, config.llm.base_url)
    api_key = environment.openai_api_key.get_secret_value() if environment.openai_api_key else None
    model = DeferredChatModel(config.llm, api_key=api_key, base_url=base_url)
    redis_url = environment.redis_url.get_secret_value() if environment.redis_url else None
    state = open_state(redis_url, config, environment)
    if tools.sign_in_stores is not None:
        tools.sign_in_stores.use(state.oauth)
    # The Slack directory (user groups, workspace admins) is added with the Slack side.
    resolver = RoleResolver(config.roles, grants=state.shared.grants, cache=state.shared.roles)
    policy = Policy(
        config.roles,
        resolver,
        state.shared.switches,
        state.shared.policy_reads,
        approval=config.approval,
    )
    settings = loop_settings(config)
    estimate = CallEstimator(model.estimator, settings.price, config.llm.max_tokens)
    budgets = Budgets(
        config.budgets, config.roles, state.budgets, state.shared.audit, estimate, policy
    )
    # MCP servers with `sampling: true` are answered by the bot's own model, within the
    # spending limits of the person whose tool call asks.
    tools.mcp.use_sampler(model_sampler(model, settings.price, state, budgets))
    return Services(config, environment, tools, model, settings, state, policy, budgets)


def model_sampler(
    model: DeferredChatModel, price: Price | None, state: State, budgets: Budgets
) -> ModelSampler[Usage]:
    """MCP sampling answered by ``model`` within the person's spending limits: the tokens
    priced and counted in the person's usage (``turns=0``: spent outside a turn's own model
    calls), each request audited."""

    async def count_tokens(who: Requester, usage: Usage) -> None:
        await state.shared.usage.record(who.team, who.user, usage, cost_of(usage, price), turns=0)

    async def audit(*, kind: str, **entry: Any) -> None:
        await state.shared.audit.add(AuditEntry(AuditKind(kind), **entry))

    async def model_for(who: Requester) -> CappableChatModel:
        person = Person(who.team, who.user, who.channel, user_team=who.user_team)
        return await budgets.guard_for(model, person, who.thread)

    return ModelSampler(model, count_tokens, audit, model_for)
