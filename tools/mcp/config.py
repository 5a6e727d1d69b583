"""The ``mcp:`` section of the config file: which servers, how to reach them, whether each
person signs in to them (``auth: oauth``), which tools."""

from __future__ import annotations

import os
import re
from typing import Any, Literal, Self

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

# ${NAME}, or ${env:NAME} as Cursor and VS Code spell it.
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
# VS Code's other variables (${input:...}, ${config:...}): nothing here can answer them.
_OTHER_VARIABLE = re.compile(r"\$\{(?!env:)[A-Za-z]+:[^}]*\}")

Transport = Literal["stdio", "streamable_http", "sse"]
# How other MCP clients spell the transports (VS Code and Cursor: "http"; some: dashes).
_TRANSPORT_SPELLINGS = {
    "stdio": "stdio",
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
    "http": "streamable_http",
    "sse": "sse",
}


class EnvironmentVariableMissing(ValueError):
    pass


def substitute(text: str) -> str:
    """Replace each ``${NAME}`` (or ``${env:NAME}``) with that environment variable; a
    missing one is an error."""

    other = _OTHER_VARIABLE.search(text)
    if other is not None:
        raise EnvironmentVariableMissing(
            f"{other.group(0)} cannot be filled in here; use ${{NAME}} or ${{env:NAME}} "
            "with the value in the environment"
        )

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise EnvironmentVariableMissing(f"${{{name}}} is not set in the environment")
        return os.environ[name]

    return _VARIABLE.sub(value, text)


def substituted(text: str) -> list[str]:
    """The values :func:`substitute` puts into ``text``: each ``${NAME}``'s variable that is
    set (the caller's secrets to keep out of its output)."""
    return [os.environ[m.group(1)] for m in _VARIABLE.finditer(text) if m.group(1) in os.environ]


def transport_named(spelling: str) -> Transport | None:
    """The transport a spelling means (``http``, ``streamable-http``, ``sse``, ...)."""
    found = _TRANSPORT_SPELLINGS.get(spelling.strip().lower())
    return found  # type: ignore[return-value]


# Which of a server's tools need a person's approval (tools/mcp/remote_tools.py
# approval_reason): writes (the default), destructive (an opt-in), always, never.
Approval = Literal["always", "never", "writes", "destructive"]

# How a server's requests are authorised: none (or its configured headers), or each person
# signs in (OAuth 2.1, tools/mcp/oauth/) and the calls carry that person's token.
Auth = Literal["none", "oauth"]
# How a pre-registered client proves itself at the token endpoint (RFC 7591's names).
TokenEndpointAuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]


class McpOAuthConfig(BaseModel):
    """``mcp.servers.NAME.oauth``: a client registered with the server's authorization server
    beforehand. Without this section (or without ``client_id``), the client is described by
    a metadata document (CIMD) where the server supports it, else registered dynamically."""

    model_config = ConfigDict(extra="forbid")

    client_id: str | None = Field(
        default=None, description="A pre-registered client's id; ${NAME} is substituted."
    )
    client_secret: str | None = Field(
        default=None,
        repr=False,
        description="Its secret, if it has one; ${NAME} is substituted (keep it in the "
        "environment).",
    )
    scopes: list[str] = Field(
        default_factory=list,
        description="Scopes asked for besides those the server names in its challenge.",
    )
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = Field(
        default=None,
        description="client_secret_basic, client_secret_post or none; default "
        "client_secret_basic with a client_secret, none without.",
    )

    @model_validator(mode="after")
    def _a_secret_needs_its_client(self) -> Self:
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("client_secret needs client_id (the client it is for)")
        method = self.token_endpoint_auth_method
        if method in ("client_secret_basic", "client_secret_post") and self.client_secret is None:
            raise ValueError(f"token_endpoint_auth_method {method} needs client_secret")
        if method == "none" and self.client_secret is not None:
            raise ValueError(
                "token_endpoint_auth_method none sends no client_secret; remove the secret "
                "or use client_secret_basic or client_secret_post"
            )
        for key, given in (("client_id", self.client_id), ("client_secret", self.client_secret)):
            if given is not None:
                try:
                    substitute(given)
                except EnvironmentVariableMissing as exc:
                    raise ValueError(f"{key}: {exc}") from None
        return self

    @property
    def auth_method(self) -> TokenEndpointAuthMethod:
        """How the client proves itself: as configured, else client_secret_basic with a
        secret and none without."""
        if self.token_endpoint_auth_method is not None:
            return self.token_endpoint_auth_method
        return "client_secret_basic" if self.client_secret is not None else "none"

    def substitutions(self) -> list[str]:
        """Every value ``${NAME}`` substitution puts into its client id and secret."""
        given = [self.client_id, self.client_secret]
        return [value for text in given if text is not None for value in substituted(text)]


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    transport: Transport | None = Field(
        default=None,
        validation_alias=AliasChoices("transport", "type"),
        description="stdio, streamable_http or sse; default: stdio with `command`, "
        "streamable HTTP (falling back to SSE, except with auth: oauth) with `url`.",
    )
    # stdio servers
    command: str | None = Field(default=None, description="Program to start (stdio transport).")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment; ${NAME} is substituted."
    )
    cwd: str | None = Field(default=None, description="Working directory of the program.")
    # HTTP servers (streamable HTTP or SSE)
    url: str | None = Field(default=None, description="Endpoint (streamable HTTP or SSE).")
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers; ${NAME} is substituted."
    )
    auth: Auth = Field(
        default="none",
        description="oauth: each person signs in to the server and their calls carry their "
        "own token (a streamable HTTP `url`; `oauth.redirect_base_url` set).",
    )
    oauth: McpOAuthConfig | None = Field(
        default=None, description="With auth: oauth: a client registered beforehand."
    )
    # all
    allow: list[str] = Field(
        default_factory=lambda: ["*"], description="Tool-name globs to take from the server."
    )
    deny: list[str] = Field(default_factory=list, description="Tool-name globs to leave out.")
    prefix: str = Field(
        default="", pattern=r"^[A-Za-z0-9_-]*$", description="Put before each tool's name."
    )
    connect_timeout_s: float = Field(
        default=10.0, gt=0, description="Start-up waits no longer for it (it keeps starting)."
    )
    call_timeout_s: float = Field(default=30.0, gt=0, description="Per tool call.")
    ping_interval_s: float = Field(
        default=15.0, gt=0, description="How often a quiet connection is checked."
    )
    sampling: bool = Field(
        default=False, description="Let the server ask the bot's model (sampling/createMessage)."
    )
    sampling_max_tokens: int = Field(
        default=1000, ge=1, description="Most tokens one sampling request may generate."
    )
    sampling_max_requests_per_call: int = Field(
        default=5,
        ge=1,
        description="Most sampling requests the server may make during one tool call; the "
        "next ones get an error (`sampling: false` serves none).",
    )
    approval: Approval = Field(
        default="writes",
        description="Which of its tools need a person's approval before they run. writes "
        "(default): every tool that does not say readOnlyHint: true. destructive (opt in for "
        "a server you trust to say so): only tools that may destroy; one that says "
        "destructiveHint: false or readOnlyHint: true runs unasked. In both, a tool that says "
        "readOnlyHint: true and destructiveHint: true asks (contradictory hints: fail "
        "closed). always, never: every tool, none. The annotations are the server's word "
        "and only ever add approval.",
    )

    @model_validator(mode="before")
    @classmethod
    def _sampling_as_a_section(cls, data: Any) -> Any:
        """``sampling: {max_tokens: N, max_requests_per_call: N, enabled: true}`` is the same
        as ``sampling: true`` with ``sampling_max_tokens`` and
        ``sampling_max_requests_per_call`` (``enabled`` defaults to true)."""
        if not isinstance(data, dict) or not isinstance(data.get("sampling"), dict):
            return data
        section = dict(data["sampling"])
        unknown = sorted(set(section) - {"enabled", "max_tokens", "max_requests_per_call"})
        if unknown:
            raise ValueError(
                f"sampling: unknown key {unknown[0]!r} "
                "(use enabled, max_tokens, max_requests_per_call)"
            )
        flat = {**data, "sampling": section.get("enabled", True)}
        for key in ("max_tokens", "max_requests_per_call"):
            if key in section:
                if f"sampling_{key}" in data:
                    raise ValueError(f"give sampling.{key} or sampling_{key}, not both")
                flat[f"sampling_{key}"] = section[key]
        return flat

    @field_validator("transport", mode="before")
    @classmethod
    def _transport_spelling(cls, value: Any) -> Any:
        if isinstance(value, str):
            found = transport_named(value)
            if found is None:
                raise ValueError(f"unknown transport {value!r}; use stdio, streamable_http or sse")
            return found
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if self.command is not None and self.url is not None:
            raise ValueError("give either `command` (stdio) or `url` (HTTP), not both")
        if self.transport == "stdio" and self.url is not None:
            raise ValueError("transport stdio needs `command`, not `url`")
        if self.transport in ("streamable_http", "sse") and self.command is not None:
            raise ValueError(f"transport {self.transport} needs `url`, not `command`")
        for field, values in (("env", self.env), ("headers", self.headers)):
            for key, text in values.items():
                try:
                    substitute(text)
                except EnvironmentVariableMissing as exc:
                    raise ValueError(f"{field}.{key}: {exc}") from None
        for field, given in (("command", self.command), ("url", self.url), ("cwd", self.cwd)):
            if given is not None:
                try:
                    substitute(given)
                except EnvironmentVariableMissing as exc:
                    raise ValueError(f"{field}: {exc}") from None
        for index, arg in enumerate(self.args):
            try:
                substitute(arg)
            except EnvironmentVariableMissing as exc:
                raise ValueError(f"args[{index}]: {exc}") from None
        return self

    @model_validator(mode="after")
    def _oauth_rules(self) -> Self:
        problem = oauth_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self

    def substitutions(self) -> list[str]:
        """Every value ``${NAME}`` substitution puts into any of its settings."""
        given = [self.command, self.cwd, self.url, *self.args]
        given += [*self.headers.values(), *self.env.values()]
        found = [value for text in given if text is not None for value in substituted(text)]
        if self.oauth is not None:
            found += self.oauth.substitutions()
        return found

    @property
    def reachable(self) -> bool:
        """Whether it says how to reach the server (a ``command`` or a ``url``)."""
        return self.command is not None or self.url is not None

    @property
    def kind(self) -> Transport:
        """The transport to use (``streamable_http`` for a URL without one: it falls back to
        SSE when the server does not speak streamable HTTP, unless :attr:`may_use_sse` says
        no)."""
        if self.transport is not None:
            return self.transport
        return "stdio" if self.command is not None else "streamable_http"

    @property
    def may_use_sse(self) -> bool:
        """Whether SSE may be used for it at all (given as its transport, or tried when a URL
        without one has no streamable HTTP endpoint). Never with ``auth: oauth``: a server
        that signs people in speaks streamable HTTP, and its 401 or 404 is never read as
        "try SSE"."""
        return self.auth == "none"


def oauth_problem(server: McpServerConfig) -> str | None:
    """What is wrong with a server's ``auth``/``oauth`` settings, in words naming the key
    (None: nothing). Checked as each server is read, and again once ``mcp.servers_file``'s
    entries are merged with the YAML's."""
    if server.auth != "oauth":
        if server.oauth is not None:
            return "oauth: is only for a server with auth: oauth (add it, or remove oauth:)"
        return None
    if server.command is not None or server.transport in ("stdio", "sse"):
        given = server.transport or "stdio"
        return (
            f"auth: oauth needs streamable HTTP (a `url`, transport unset or "
            f"streamable_http), not {given}"
        )
    named = sorted(key for key in server.headers if key.strip().lower() == "authorization")
    if named:
        return (
            f"headers.{named[0]}: auth: oauth sends each person's own token; remove the "
            "Authorization header"
        )
    return None


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    servers_file: str | None = Field(
        default=None,
        description="A Claude Desktop / Cursor / VS Code JSON file whose `mcpServers` are "
        "added (relative to the config file; ${NAME} and ~ are expanded).",
    )
    reconnect_max_s: float = Field(
        default=30.0, gt=0, description="Longest wait between reconnection attempts."
    )
    elicitation_timeout_s: float = Field(
        default=300.0, gt=0, description="A question a server asks a person is declined after it."
    )

    @model_validator(mode="after")
    def _servers_are_reachable(self) -> Self:
        if self.servers_file is None:
            for name, server in self.servers.items():
                if not server.reachable and server.auth == "oauth":
                    raise ValueError(
                        f"servers.{name}: auth: oauth needs `url` (a streamable HTTP server)"
                    )
                if not server.reachable:
                    raise ValueError(
                        f"servers.{name}: give either `command` (stdio) or `url` (HTTP), or "
                        "list the server in `servers_file`"
                    )
        return self
