"""Per-person sign-in's config: the ``oauth:`` section, ``auth: oauth`` and ``oauth:`` on an
MCP server, and the rules that stop start-up naming the key."""

from __future__ import annotations

import pytest

from bot.config.environment import Environment
from bot.config.errors import ConfigError
from bot.config.loading import parse_config
from bot.config.schema import AppConfig, oauth_servers
from bot.oauth.config import OAuthConfig
from tools.mcp.config import McpConfig, McpServerConfig
from tools.mcp.servers_file import ServersFileError, merge_servers, parse_servers

BASE = "oauth: {redirect_base_url: 'https://bot.example.com'}\n"


def server(settings: str) -> str:
    """A config with one MCP server ``s`` set as ``settings`` (YAML flow mapping), and the
    sign-in's callback set."""
    return BASE + f"mcp: {{servers: {{s: {settings}}}}}\n"


def problem(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "acme.yaml")
    message = str(caught.value)
    assert message.startswith("acme.yaml: invalid configuration\n")
    return message


def test_the_defaults() -> None:
    config = AppConfig()
    assert config.oauth == OAuthConfig()
    assert config.oauth.redirect_base_url is None and config.oauth.callback_url is None
    assert config.oauth.allow_external is False
    assert config.oauth.console_port == 8976
    assert config.oauth.max_sessions_per_server == 200
    assert config.oauth.session_idle_s == 300
    assert config.oauth.list_ttl_s == 60
    plain = McpServerConfig(url="https://mcp.example.com/mcp")
    assert plain.auth == "none" and plain.oauth is None and plain.may_use_sse
    assert oauth_servers(config) == []


@pytest.mark.parametrize(
    ("given", "callback"),
    [
        ("https://bot.example.com", "https://bot.example.com/oauth/callback"),
        ("https://bot.example.com/", "https://bot.example.com/oauth/callback"),
        ("https://bot.example.com:8443", "https://bot.example.com:8443/oauth/callback"),
        ("http://localhost:3000", "http://localhost:3000/oauth/callback"),
        ("http://127.0.0.1:3000/", "http://127.0.0.1:3000/oauth/callback"),
    ],
)
def test_the_callback_is_under_the_base_url(given: str, callback: str) -> None:
    config = parse_config(f"oauth: {{redirect_base_url: '{given}'}}")
    assert config.oauth.callback_url == callback
    assert config.oauth.redirect_base_url == callback.removesuffix("/oauth/callback")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            "http://bot.example.com",
            "oauth.redirect_base_url: http:// is allowed only on localhost or 127.0.0.1; give "
            "an https:// URL",
        ),
        ("http://10.0.0.5:3000", "oauth.redirect_base_url: http:// is allowed only on"),
        ("ftp://bot.example.com", "oauth.redirect_base_url: give an https:// URL"),
        ("bot.example.com", "oauth.redirect_base_url: give an https:// URL"),
        ("https://", "oauth.redirect_base_url: give an https:// URL"),
        (
            "https://bot.example.com/?team=T1",
            "oauth.redirect_base_url: give the base URL without a query (?...) or fragment",
        ),
        ("https://bot.example.com/#top", "oauth.redirect_base_url: give the base URL without a"),
        ("https://bot.example.com?", "oauth.redirect_base_url: give the base URL without a"),
        ("https://u:p@bot.example.com", "oauth.redirect_base_url: give the base URL without a"),
        ("https://[::1", "oauth.redirect_base_url: 'https://[::1' is not a URL"),
    ],
)
def test_a_base_url_browsers_cannot_use_is_refused(given: str, expected: str) -> None:
    assert expected in problem(f"oauth: {{redirect_base_url: '{given}'}}")


@pytest.mark.parametrize(
    "given",
    [
        "https://bot.example.com/agent",
        "https://bot.example.com/agent//",
        "http://localhost:3000/bot/",
    ],
)
def test_a_base_url_with_a_path_is_refused(given: str) -> None:
    """The pages are served at /oauth/... on the bot's port: behind a path, the start page's
    form and the browser's cookie (Path=/oauth) would miss them."""
    assert (
        "oauth.redirect_base_url: give the base URL with no path: the sign-in pages are served "
        "at /oauth/... on the bot's port"
    ) in problem(f"oauth: {{redirect_base_url: '{given}'}}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("oauth: {redirect_url: 'https://b'}", "oauth.redirect_url: unknown key"),
        ("oauth: {console_port: 0}", "oauth.console_port: Input should be greater than"),
        ("oauth: {console_port: 70000}", "oauth.console_port: Input should be less than"),
        ("oauth: {max_sessions_per_server: 0}", "oauth.max_sessions_per_server"),
        ("oauth: {session_idle_s: 0}", "oauth.session_idle_s"),
        ("oauth: {list_ttl_s: -1}", "oauth.list_ttl_s"),
        ("oauth: {allow_external: perhaps}", "oauth.allow_external"),
    ],
)
def test_the_sections_keys_are_checked(text: str, expected: str) -> None:
    assert expected in problem(text)


def test_every_key_of_the_section() -> None:
    config = parse_config(
        "oauth: {redirect_base_url: 'https://b.example.com', allow_external: true, "
        "console_port: 9000, max_sessions_per_server: 5, session_idle_s: 30, list_ttl_s: 5}"
    )
    assert config.oauth == OAuthConfig(
        redirect_base_url="https://b.example.com",
        allow_external=True,
        console_port=9000,
        max_sessions_per_server=5,
        session_idle_s=30,
        list_ttl_s=5,
    )


def test_a_server_people_sign_in_to_needs_the_callback() -> None:
    text = "mcp: {servers: {linear: {url: 'https://mcp.linear.app/mcp', auth: oauth}}}"
    assert (
        "(top level): oauth.redirect_base_url is not set, and mcp.servers.linear has auth: "
        "oauth: people's browsers come back from signing in to "
        "<oauth.redirect_base_url>/oauth/callback"
    ) in problem(text)
    config = parse_config(BASE + text)
    assert oauth_servers(config) == ["linear"]
    linear = config.mcp.servers["linear"]
    assert (linear.auth, linear.oauth, linear.kind) == ("oauth", None, "streamable_http")
    # Without a server that signs people in, the section may stay empty.
    assert parse_config("mcp: {servers: {x: {url: 'https://x.example.com/mcp'}}}").oauth == (
        OAuthConfig()
    )


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            "{command: npx, auth: oauth}",
            "mcp.servers.s: auth: oauth needs streamable HTTP (a `url`, transport unset or "
            "streamable_http), not stdio",
        ),
        (
            "{url: 'https://x/sse', transport: sse, auth: oauth}",
            "mcp.servers.s: auth: oauth needs streamable HTTP (a `url`, transport unset or "
            "streamable_http), not sse",
        ),
        ("{url: 'https://x/sse', type: sse, auth: oauth}", "auth: oauth needs streamable HTTP"),
        ("{auth: oauth}", "mcp: servers.s: auth: oauth needs `url` (a streamable HTTP server)"),
        (
            "{url: 'https://x/mcp', auth: oauth, headers: {authorization: 'Bearer t'}}",
            "mcp.servers.s: headers.authorization: auth: oauth sends each person's own token; "
            "remove the Authorization header",
        ),
        ("{url: 'https://x/mcp', auth: basic}", "mcp.servers.s.auth: Input should be 'none'"),
        (
            "{url: 'https://x/mcp', oauth: {client_id: abc}}",
            "mcp.servers.s: oauth: is only for a server with auth: oauth",
        ),
        (
            "{url: 'https://x/mcp', auth: none, oauth: {scopes: [a]}}",
            "mcp.servers.s: oauth: is only for a server with auth: oauth",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_secret: s}}",
            "mcp.servers.s.oauth: client_secret needs client_id (the client it is for)",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_id: a, "
            "client_secret: '${SURELY_UNSET_VARIABLE}'}}",
            "mcp.servers.s.oauth: client_secret: ${SURELY_UNSET_VARIABLE} is not set in the "
            "environment",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_id: '${env:SURELY_UNSET_ID}'}}",
            "mcp.servers.s.oauth: client_id: ${SURELY_UNSET_ID} is not set in the environment",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_id: '${input:id}'}}",
            "mcp.servers.s.oauth: client_id: ${input:id} cannot be filled in here",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_id: a, "
            "token_endpoint_auth_method: client_secret_post}}",
            "mcp.servers.s.oauth: token_endpoint_auth_method client_secret_post needs "
            "client_secret",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_id: a, client_secret: s, "
            "token_endpoint_auth_method: none}}",
            "mcp.servers.s.oauth: token_endpoint_auth_method none sends no client_secret",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_id: a, "
            "token_endpoint_auth_method: private_key_jwt}}",
            "mcp.servers.s.oauth.token_endpoint_auth_method: Input should be",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {client_id: a, scope: b}}",
            "mcp.servers.s.oauth.scope: unknown key",
        ),
        (
            "{url: 'https://x/mcp', auth: oauth, oauth: {scopes: read}}",
            "mcp.servers.s.oauth.scopes: Input should be a valid list",
        ),
    ],
)
def test_a_servers_sign_in_rules_name_the_key(settings: str, expected: str) -> None:
    assert expected in problem(server(settings))


def test_a_pre_registered_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_MCP_CLIENT_ID", "1234.5678")
    monkeypatch.setenv("TEST_MCP_CLIENT_SECRET", "client-secret-9")
    config = parse_config(
        server(
            "{url: 'https://mcp.slack.com/mcp', auth: oauth, transport: streamable_http, "
            "headers: {X-Team: T1}, oauth: {client_id: '${TEST_MCP_CLIENT_ID}', "
            "client_secret: '${env:TEST_MCP_CLIENT_SECRET}', scopes: [search:read]}}"
        )
    )
    slack = config.mcp.servers["s"]
    assert slack.oauth is not None
    assert slack.oauth.scopes == ["search:read"]
    assert slack.oauth.auth_method == "client_secret_basic"
    # The values substituted are the server's secrets, to be redacted.
    assert {"1234.5678", "client-secret-9"} <= set(slack.substitutions())
    # The secret never shows in the config's repr.
    assert "client-secret-9" not in repr(slack) and "TEST_MCP_CLIENT_SECRET" not in repr(slack)


@pytest.mark.parametrize(
    ("oauth", "method"),
    [
        ("{client_id: a}", "none"),
        ("{client_id: a, client_secret: s}", "client_secret_basic"),
        (
            "{client_id: a, client_secret: s, token_endpoint_auth_method: client_secret_post}",
            "client_secret_post",
        ),
        ("{scopes: [a, b]}", "none"),
    ],
)
def test_how_the_client_proves_itself(oauth: str, method: str) -> None:
    config = parse_config(server(f"{{url: 'https://x/mcp', auth: oauth, oauth: {oauth}}}"))
    found = config.mcp.servers["s"].oauth
    assert found is not None and found.auth_method == method


def test_a_server_people_sign_in_to_never_uses_sse() -> None:
    bare = McpServerConfig(url="https://mcp.example.com/mcp", auth="oauth")
    assert bare.kind == "streamable_http" and not bare.may_use_sse
    explicit = McpServerConfig(
        url="https://mcp.example.com/mcp", auth="oauth", transport="streamable-http"
    )
    assert explicit.kind == "streamable_http" and not explicit.may_use_sse
    assert McpServerConfig(url="https://mcp.example.com/sse", transport="sse").may_use_sse


def test_the_rules_hold_once_the_servers_file_is_merged() -> None:
    """``auth: oauth`` is set in the YAML only; over a servers_file entry, the merged server
    is checked again."""
    listed = parse_servers(
        '{"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp"},'
        ' "old": {"type": "sse", "url": "https://mcp.example.com/sse"},'
        ' "local": {"command": "uvx"},'
        ' "signed": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer t"}}}}',
        "f.json",
    )
    merged = merge_servers(
        McpConfig.model_validate(
            {"servers_file": "f.json", "servers": {"remote": {"auth": "oauth", "prefix": "r_"}}}
        ),
        listed,
    )
    remote = merged.servers["remote"]
    assert (remote.auth, remote.url, remote.prefix) == (
        "oauth",
        "https://mcp.example.com/mcp",
        "r_",
    )
    for name, expected in (
        ("old", "mcp.servers.old: auth: oauth needs streamable HTTP"),
        ("local", "mcp.servers.local: auth: oauth needs streamable HTTP"),
        ("signed", "mcp.servers.signed: headers.Authorization: auth: oauth sends each person's"),
    ):
        config = McpConfig.model_validate(
            {"servers_file": "f.json", "servers": {name: {"auth": "oauth"}}}
        )
        with pytest.raises(ServersFileError) as caught:
            merge_servers(config, listed)
        assert str(caught.value).startswith(expected)


def test_the_secret_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_AGENT_SECRET_KEY", raising=False)
    monkeypatch.delenv("SLACK_AGENT_SECRET_KEY_PREVIOUS", raising=False)
    environment = Environment()
    assert environment.slack_agent_secret_key is None
    assert environment.slack_agent_secret_key_previous is None
    monkeypatch.setenv("SLACK_AGENT_SECRET_KEY", "a2V5LW5vdw==")
    monkeypatch.setenv("SLACK_AGENT_SECRET_KEY_PREVIOUS", "a2V5LWJlZm9yZQ==")
    environment = Environment()
    assert environment.slack_agent_secret_key is not None
    assert environment.slack_agent_secret_key.get_secret_value() == "a2V5LW5vdw=="
    assert environment.slack_agent_secret_key_previous is not None
    assert environment.slack_agent_secret_key_previous.get_secret_value() == "a2V5LWJlZm9yZQ=="
    assert "a2V5LW5vdw" not in repr(environment)
    monkeypatch.setenv("SLACK_AGENT_SECRET_KEY", "")  # empty: not set
    assert Environment().slack_agent_secret_key is None
