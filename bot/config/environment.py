"""Secrets and endpoints from the environment (never from the config file)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Environment(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    slack_agent_config: Path | None = None
    redis_url: SecretStr | None = None  # may hold a password
