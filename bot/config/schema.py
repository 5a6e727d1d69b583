"""The YAML config file's shape. Every key is documented in README.md."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bot.budget.config import BudgetsConfig
from bot.channels.config import ChannelsConfig
from bot.llm.pricing import Price
from bot.oauth.config import OAuthConfig
from bot.schedules.config import SchedulesConfig
from permissions.approval import ApprovalConfig, unknown_approver_roles
from permissions.config import RoleConfig
from tools.config import ToolsConfig
from tools.mcp.config import McpConfig

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant working inside Slack. Answer clearly and concisely. "
    "Use the tools you are given when they help, and say so when you cannot do something."
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMConfig(_Strict):
    model: str = Field(default="gpt-4o-mini", min_length=1)
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint; OPENAI_BASE_URL overrides it."
    )
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=60.0, gt=0, description="Per model request.")
    max_retries: int = Field(default=2, ge=0, le=10, description="Retries by the openai SDK.")
    stream: bool = Field(default=True, description="Stream answers token by token.")
    stream_usage: bool = Field(
        default=True, description="Ask for usage in the stream (stream_options.include_usage)."
    )
    parallel_tool_calls: bool | None = Field(
        default=None, description="Sent to the server only when set."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Extra provider-specific request fields."
    )
    max_rounds: int = Field(default=6, ge=1, le=50, description="Tool rounds before answering.")
    tool_timeout_s: float = Field(default=30.0, gt=0, description="Default per tool call.")
    tool_output_chars: int = Field(default=8000, ge=200, description="Longer output is cut.")
    prices: dict[str, Price] = Field(
        default_factory=dict, description="Per-model prices per million tokens."
    )
    vision: bool = Field(
        default=False,
        description="The model reads pictures: images people share are sent as image parts.",
    )


class HistoryConfig(_Strict):
    token_budget: int = Field(
        default=16000, ge=500, description="Tokens of earlier turns sent to the model."
    )
    idle_ttl_s: int = Field(
        default=7 * 24 * 3600, ge=60, description="A thread's history expires after this idle time."
    )
    max_turns: int = Field(default=200, ge=1, description="Turns kept per thread.")
    max_bytes: int = Field(default=2_000_000, ge=10_000, description="Bytes kept per thread.")


class QueueConfig(_Strict):
    concurrency: int = Field(default=8, ge=1, le=1000, description="Turns a process runs at once.")
    claim_idle_s: float = Field(
        default=10.0,
        gt=0,
        description="A turn whose owner stopped heart-beating this long is taken over.",
    )
    max_attempts: int = Field(default=3, ge=1, le=20, description="Then it is dead-lettered.")
    lock_ttl_s: float = Field(
        default=10.0,
        gt=1,
        description="Thread lock lifetime; the heartbeat renews it every third of it.",
    )
    deliver_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="How long delivery is retried while Slack refuses, then dead-lettered.",
    )
    shutdown_grace_s: float = Field(
        default=25.0,
        ge=0,
        description="On SIGTERM, how long running turns may finish before they are handed back.",
    )
    dedup_ttl_s: int = Field(
        default=24 * 3600, ge=60, description="How long a delivered event id is remembered."
    )
    stream_max_len: int = Field(default=100_000, ge=1000, description="Cap of the turn stream.")


class RedisConfig(_Strict):
    key_prefix: str = Field(
        default="slack-agent:", min_length=1, description="Prefix of every key this bot writes."
    )
    max_connections: int = Field(
        default=256, ge=8, description="Connections per process; callers wait for a free one."
    )
    require_persistence: bool = Field(
        default=False,
        description="`run` and `worker` refuse to start unless Redis is known to keep its data "
        "on disk (AOF or RDB snapshots).",
    )
    cluster: bool = Field(
        default=False,
        description="Redis Cluster: REDIS_URL names any one node; every key carries its "
        "shard's hash tag (docs/deploy.md).",
    )
    shards: int = Field(
        default=16,
        ge=2,
        le=1024,
        description="With cluster: true, the shards keys and turn streams are spread over "
        "(change it only with the queue drained).",
    )
    replica_acks: int | None = Field(
        default=None,
        ge=0,
        le=8,
        description="Replicas that must confirm a write before the bot builds on it (an "
        "event's ack, each step of a turn; WAIT): behind Sentinels, up to this many of the "
        "replicas they see in good health. Default: 1 behind Sentinels, 0 (off) otherwise; "
        "not with cluster: true (docs/deploy.md).",
    )
    replica_ack_timeout_ms: int = Field(
        default=500,
        ge=10,
        le=2000,
        description="How long a write waits for its replicas' confirmation before it is "
        "refused (an event then gets a 503 and Slack sends it again).",
    )

    @model_validator(mode="after")
    def _prefix_without_tag(self) -> Self:
        if self.cluster and ("{" in self.key_prefix or "}" in self.key_prefix):
            raise ValueError(
                "key_prefix may not hold '{' or '}' with cluster: true (the bot puts each "
                "key's hash tag after the prefix)"
            )
        return self

    @model_validator(mode="after")
    def _no_replica_acks_on_a_cluster(self) -> Self:
        if self.cluster and self.replica_acks:
            raise ValueError(
                "replica_acks is not for a Redis Cluster: its failover (CLUSTER FAILOVER) "
                "hands a shard over without losing writes, and WAIT cannot follow a key's "
                "node there; leave it unset (docs/deploy.md)"
            )
        return self


class SuggestedPrompt(_Strict):
    title: str = Field(min_length=1, max_length=100)
    message: str = Field(min_length=1)


class SlackConfig(_Strict):
    follow_up_in_threads: bool = Field(
        default=True, description="Answer thread replies without a mention where the bot took part."
    )
    answer_bots: bool = Field(default=False, description="Answer messages from other bots.")
    streaming: bool = Field(default=True, description="Stream answers with chat.startStream.")
    stream_buffer_chars: int = Field(
        default=256, ge=1, le=10_000, description="Characters buffered per appendStream call."
    )
    edit_interval_s: float = Field(
        default=1.0, ge=0.2, le=30, description="At most one edit per message in this time."
    )
    status_text: str = Field(default="is thinking…", min_length=1)
    loading_messages: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="Rotating lines shown with the assistant status (at most 10).",
    )
    task_display: Literal["timeline", "plan"] = Field(
        default="timeline", description="How Slack shows tool calls inside a streamed answer."
    )
    agent_sessions: bool = Field(
        default=True,
        description="Drive Slack's agent sessions (status, native stop button) where offered.",
    )
    feedback: bool = Field(default=True, description="Feedback buttons under every answer.")
    suggested_prompts: list[SuggestedPrompt] = Field(default_factory=list, max_length=4)
    greeting: str | None = Field(
        default=None, description="Posted when someone opens a new thread in the agent pane."
    )
    command: str = Field(
        default="/agent", pattern=r"^/[a-z0-9_-]{1,31}$", description="The slash command's name."
    )
    file_text_chars: int = Field(
        default=20_000,
        ge=0,
        le=1_000_000,
        description="Characters of each shared text file (code, CSV, JSON...) given to the model.",
    )
    allow_broadcast: bool = Field(
        default=False,
        description="Let what the bot writes notify a whole channel (<!channel>, <!here>, "
        "<!everyone>, user groups). Off: they are shown as plain text.",
    )
    socket_connections: int = Field(
        default=2,
        ge=1,
        le=10,
        description="Socket Mode: connections kept open at once (Slack allows up to 10).",
    )


class TelemetryConfig(_Strict):
    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP endpoint for traces (e.g. http://collector:4318); "
        "OTEL_EXPORTER_OTLP_ENDPOINT overrides it. Unset: no traces leave the process.",
    )
    service_name: str = Field(
        default="slack-agent", min_length=1, description="service.name of the traces."
    )


class AppConfig(_Strict):
    system_prompt: str = Field(default=DEFAULT_SYSTEM_PROMPT, min_length=1)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    roles: dict[str, RoleConfig] = Field(default_factory=dict)
    approval: ApprovalConfig = Field(default_factory=ApprovalConfig)
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)
    channels: ChannelsConfig = Field(
        default_factory=dict,
        description="Settings per channel: by channel ID, channel-ID glob, or `external`.",
    )
    schedules: SchedulesConfig = Field(default_factory=SchedulesConfig)
    history: HistoryConfig = Field(default_factory=HistoryConfig)
    queue: QueueConfig = Field(default_factory=QueueConfig)
    redis: RedisConfig = Field(default_factory=RedisConfig)
    slack: SlackConfig = Field(default_factory=SlackConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    oauth: OAuthConfig = Field(default_factory=OAuthConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)

    @field_validator("roles")
    @classmethod
    def _one_default_role(cls, roles: dict[str, RoleConfig]) -> dict[str, RoleConfig]:
        defaults = [name for name, role in roles.items() if role.default]
        if len(defaults) > 1:
            raise ValueError(f"only one role may be the default, found {', '.join(defaults)}")
        return roles

    @model_validator(mode="after")
    def _sign_in_has_a_callback(self) -> Self:
        signing_in = oauth_servers(self)
        if signing_in and self.oauth.redirect_base_url is None:
            raise ValueError(
                f"oauth.redirect_base_url is not set, and mcp.servers.{signing_in[0]} has "
                "auth: oauth: people's browsers come back from signing in to "
                "<oauth.redirect_base_url>/oauth/callback (the bot's public https:// address)"
            )
        return self

    @model_validator(mode="after")
    def _approvers_are_roles(self) -> Self:
        problems = unknown_approver_roles(self.approval, self.roles)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def oauth_servers(config: AppConfig) -> list[str]:
    """The MCP servers each person signs in to (``auth: oauth``), by name."""
    return [name for name, server in config.mcp.servers.items() if server.auth == "oauth"]
