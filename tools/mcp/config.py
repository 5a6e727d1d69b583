"""The ``mcp:`` section of the config file: which servers, how to reach them, which tools."""

from __future__ import annotations

import os
import re
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class EnvironmentVariableMissing(ValueError):
    pass


def substitute(text: str) -> str:
    """Replace each ``${NAME}`` with that environment variable; a missing one is an error."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise EnvironmentVariableMissing(f"${{{name}}} is not set in the environment")
        return os.environ[name]

    return _VARIABLE.sub(value, text)


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # stdio servers
    command: str | None = Field(default=None, description="Program to start (stdio transport).")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment; ${NAME} is substituted."
    )
    cwd: str | None = Field(default=None, description="Working directory of the program.")
    # streamable HTTP servers
    url: str | None = Field(default=None, description="Endpoint (streamable HTTP transport).")
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers; ${NAME} is substituted."
    )
    # both
    allow: list[str] = Field(
        default_factory=lambda: ["*"], description="Tool-name globs to take from the server."
    )
    deny: list[str] = Field(default_factory=list, description="Tool-name globs to leave out.")
    prefix: str = Field(
        default="", pattern=r"^[A-Za-z0-9_-]*$", description="Put before each tool's name."
    )
    connect_timeout_s: float = Field(default=10.0, gt=0, description="Start-up waits no longer.")
    call_timeout_s: float = Field(default=30.0, gt=0, description="Per tool call.")
    ping_interval_s: float = Field(
        default=15.0, gt=0, description="How often a quiet connection is checked."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (stdio) or `url` (streamable HTTP), not both")
        for field, values in (("env", self.env), ("headers", self.headers)):
            for key, text in values.items():
                try:
                    substitute(text)
                except EnvironmentVariableMissing as exc:
                    raise ValueError(f"{field}.{key}: {exc}") from None
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    reconnect_max_s: float = Field(
        default=30.0, gt=0, description="Longest wait between reconnection attempts."
    )
