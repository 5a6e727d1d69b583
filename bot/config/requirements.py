"""Which environment variables a command needs, all named at once (pure).

`slack-agent run`, `slack-agent worker` and `slack-agent chat` stop at start-up with every
missing setting in one message; `slack-agent check` prints the same, one line each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.config.environment import Environment
from bot.config.schema import AppConfig, oauth_servers

Command = Literal["run", "worker", "chat"]


@dataclass(frozen=True)
class Missing:
    name: str  # the environment variable
    why: str  # what needs it, in plain words

    def __str__(self) -> str:
        return f"{self.name} is not set: {self.why}"


def socket_mode(environment: Environment) -> bool:
    """SLACK_APP_TOKEN set: Socket Mode; otherwise Slack's requests come over HTTP."""
    return environment.slack_app_token is not None


def missing_settings(
    environment: Environment, config: AppConfig | None, command: Command = "run"
) -> list[Missing]:
    """Every setting ``command`` needs and does not have. ``config`` is None when the config
    file did not load (then llm.base_url is not known to stand in for the key)."""
    found: list[Missing] = []
    base_url = environment.openai_base_url or (config.llm.base_url if config else None)
    if environment.openai_api_key is None and not base_url:
        found.append(
            Missing(
                "OPENAI_API_KEY",
                "the model's API key (or set OPENAI_BASE_URL, or llm.base_url, to a server "
                "that needs no key)",
            )
        )
    if command != "chat" and environment.slack_bot_token is None:
        found.append(Missing("SLACK_BOT_TOKEN", "the bot token (xoxb-...)"))
    if command == "run" and not socket_mode(environment) and not environment.slack_signing_secret:
        found.append(
            Missing(
                "SLACK_SIGNING_SECRET",
                "HTTP mode needs it to verify Slack's requests (or set SLACK_APP_TOKEN, an "
                "xapp- token, for Socket Mode)",
            )
        )
    signing_in = oauth_servers(config) if config is not None else []
    if signing_in and environment.slack_agent_secret_key is None:
        servers = ", ".join(f"mcp.servers.{name}" for name in signing_in)
        found.append(
            Missing(
                "SLACK_AGENT_SECRET_KEY",
                f"{servers} {'has' if len(signing_in) == 1 else 'have'} auth: oauth: people's "
                "tokens are stored encrypted with it (base64 of 32 random bytes: openssl rand "
                "-base64 32)",
            )
        )
    return found


def token_shape_problems(environment: Environment) -> list[str]:
    """Tokens that are set but look like another kind of token: the usual mix-up."""
    problems: list[str] = []
    bot = environment.slack_bot_token
    if bot is not None and not bot.get_secret_value().startswith("xoxb-"):
        problems.append("SLACK_BOT_TOKEN does not start with xoxb- (is it the bot token?)")
    app = environment.slack_app_token
    if app is not None and not app.get_secret_value().startswith("xapp-"):
        problems.append("SLACK_APP_TOKEN does not start with xapp- (is it the app-level token?)")
    return problems


def missing_message(found: list[Missing]) -> str:
    """One message naming every missing setting."""
    lines = "\n".join(f"  {m}" for m in found)
    noun = "setting is" if len(found) == 1 else "settings are"
    return f"{len(found)} required {noun} missing:\n{lines}"
