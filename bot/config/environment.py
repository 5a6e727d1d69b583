"""Secrets and endpoints from the environment (never from the config file)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Environment(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=None, extra="ignore", case_sensitive=False, env_ignore_empty=True
    )

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    slack_agent_config: Path | None = None
    redis_url: SecretStr | None = None  # may hold a password
    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None  # set: Socket Mode
    slack_api_url: str = "https://slack.com/api/"
    # People's tokens for MCP servers with auth: oauth are sealed in Redis with this key
    # (base64 of 32 random bytes); the previous one still opens what it sealed (rotation).
    slack_agent_secret_key: SecretStr | None = None
    slack_agent_secret_key_previous: SecretStr | None = None
