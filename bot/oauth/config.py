"""The ``oauth:`` section of the config file: where people's browsers come back after signing
in to a remote MCP server (``auth: oauth``), and how many sessions a process keeps for them."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

CALLBACK_PATH = "/oauth/callback"
CONSOLE_HOST = "127.0.0.1"  # where slack-agent chat serves its sign-in's pages
# http:// is allowed only here: the browser and the bot on one machine (tests, local use).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1")


class OAuthConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    redirect_base_url: str | None = Field(
        default=None,
        description="The bot's public address; the sign-in callback is "
        "<redirect_base_url>/oauth/callback. Needed by any MCP server with auth: oauth. "
        "https://, or http:// on localhost or 127.0.0.1 only; no path.",
    )
    allow_external: bool = Field(
        default=False, description="People of other workspaces (Slack Connect) may connect."
    )
    console_port: int = Field(
        default=8976,
        ge=1,
        le=65535,
        description="slack-agent chat's sign-in callback, on 127.0.0.1.",
    )
    max_sessions_per_server: int = Field(
        default=200, ge=1, description="People's sessions a process keeps open per server."
    )
    session_idle_s: float = Field(
        default=300.0, gt=0, description="A person's session unused this long is closed."
    )
    list_ttl_s: float = Field(
        default=60.0,
        gt=0,
        description="How long a person's tool list is kept when the server gives no ttlMs.",
    )

    @field_validator("redirect_base_url")
    @classmethod
    def _a_base_url_browsers_can_reach(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = value.strip()
        try:
            parts = urlsplit(text)
            host = parts.hostname
        except ValueError:
            raise ValueError(f"{value!r} is not a URL") from None
        if parts.scheme not in ("https", "http") or not host:
            raise ValueError("give an https:// URL (like https://bot.example.com)")
        if parts.scheme == "http" and host not in LOOPBACK_HOSTS:
            raise ValueError(
                "http:// is allowed only on localhost or 127.0.0.1; give an https:// URL"
            )
        if parts.path not in ("", "/"):
            raise ValueError(
                "give the base URL with no path: the sign-in pages are served at /oauth/... "
                "on the bot's port (like https://bot.example.com)"
            )
        if parts.query or parts.fragment or text.endswith(("?", "#")):
            raise ValueError("give the base URL without a query (?...) or fragment (#...)")
        if parts.username is not None or parts.password is not None:
            raise ValueError("give the base URL without a user or password")
        return text.rstrip("/")

    @property
    def callback_url(self) -> str | None:
        """Where the authorization server sends people's browsers back (None: not set)."""
        if self.redirect_base_url is None:
            return None
        return self.redirect_base_url + CALLBACK_PATH

    @property
    def console_callback_url(self) -> str:
        """Where the authorization server sends the browser back to ``slack-agent chat``:
        its own loopback address (``console_port``)."""
        return f"http://{CONSOLE_HOST}:{self.console_port}{CALLBACK_PATH}"
