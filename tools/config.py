"""The ``tools:`` section of the config file."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# "schedule" is the bot's (bot/schedules/tool.py), given to the registry by the process.
BUILTIN_NAMES = ("get_time", "calculate", "fetch_url", "schedule")


class FetchUrlConfig(BaseModel):
    """Settings of the built-in ``fetch_url`` tool. It is off while ``allowed_hosts`` is empty."""

    model_config = ConfigDict(extra="forbid")

    allowed_hosts: list[str] = Field(
        default_factory=list,
        description='Host names or globs ("docs.python.org", "*.example.com") it may fetch.',
    )
    max_bytes: int = Field(default=500_000, gt=0, description="Stop reading after this many bytes.")
    timeout_s: float = Field(default=10.0, gt=0, description="Whole-request time limit.")
    max_redirects: int = Field(default=5, ge=0)


class ToolsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    modules: list[str] = Field(
        default_factory=list,
        description="Python modules whose @tool functions are loaded, e.g. acme.tools.",
    )
    builtins: list[str] | None = Field(
        default=None,
        description="Built-in tools to load; default: every built-in that is configured.",
    )
    fetch_url: FetchUrlConfig = Field(default_factory=FetchUrlConfig)

    @field_validator("builtins")
    @classmethod
    def _known_builtins(cls, names: list[str] | None) -> list[str] | None:
        for name in names or ():
            if name not in BUILTIN_NAMES:
                raise ValueError(
                    f"unknown built-in {name!r}; choose from {', '.join(BUILTIN_NAMES)}"
                )
        return names

    @model_validator(mode="after")
    def _fetch_url_needs_hosts(self) -> ToolsConfig:
        if self.builtins and "fetch_url" in self.builtins and not self.fetch_url.allowed_hosts:
            raise ValueError(
                "fetch_url is listed in tools.builtins but tools.fetch_url.allowed_hosts is empty"
            )
        return self

    def enabled_builtins(self) -> list[str]:
        if self.builtins is not None:
            return list(self.builtins)
        return [n for n in BUILTIN_NAMES if n != "fetch_url" or self.fetch_url.allowed_hosts]
