"""The YAML config file's shape. Every key is documented in README.md."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.llm.pricing import Price
from permissions.config import RoleConfig
from tools.config import ToolsConfig

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


class AppConfig(_Strict):
    system_prompt: str = Field(default=DEFAULT_SYSTEM_PROMPT, min_length=1)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    roles: dict[str, RoleConfig] = Field(default_factory=dict)

    @field_validator("roles")
    @classmethod
    def _one_default_role(cls, roles: dict[str, RoleConfig]) -> dict[str, RoleConfig]:
        defaults = [name for name, role in roles.items() if role.default]
        if len(defaults) > 1:
            raise ValueError(f"only one role may be the default, found {', '.join(defaults)}")
        return roles
