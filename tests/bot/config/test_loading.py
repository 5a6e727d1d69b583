"""A bad config stops start-up with the key named; a good one loads with defaults filled."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.environment import Environment
from bot.config.errors import ConfigError
from bot.config.loading import load_config, parse_config
from bot.config.schema import AppConfig
from bot.process.services import build_services, config_path

EXAMPLE = """
system_prompt: "You are the ACME operations assistant."
llm:
  model: gpt-4o-mini
  max_rounds: 6
  tool_timeout_s: 30
  tool_output_chars: 8000
  prices:
    gpt-4o-mini: {input: 0.15, output: 0.60}
tools:
  builtins: [get_time, calculate]
"""


def test_the_documented_example_loads() -> None:
    config = parse_config(EXAMPLE)
    assert config.system_prompt == "You are the ACME operations assistant."
    assert config.llm.max_rounds == 6
    assert config.llm.prices["gpt-4o-mini"].output == 0.60
    assert config.tools.enabled_builtins() == ["get_time", "calculate"]


def test_no_file_and_an_empty_file_give_defaults(tmp_path: Path) -> None:
    assert load_config(None) == AppConfig()
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_config(empty) == AppConfig()
    assert AppConfig().llm.max_rounds == 6
    assert AppConfig().llm.tool_timeout_s == 30
    assert AppConfig().llm.tool_output_chars == 8000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "llm: {max_rounds: 0}",
            "llm.max_rounds: Input should be greater than or equal to 1 (got 0)",
        ),
        ("llm: {max_round: 3}", "llm.max_round: unknown key"),
        ("llm: {tool_timeout_s: soon}", "llm.tool_timeout_s: Input should be a valid number"),
        ("llm: [1, 2]", "llm: Input should be a valid dictionary"),
        ("tools: {modules: acme.tools}", "tools.modules: Input should be a valid list"),
        ("tools: {builtins: [clock]}", "tools.builtins: unknown built-in 'clock'"),
        ("tools: {builtins: [fetch_url]}", "tools.fetch_url.allowed_hosts is empty"),
        ("llm: {prices: {m: {input: 1}}}", "llm.prices.m.output: Field required"),
        (
            "roles: {a: {default: true}, b: {default: true}}",
            "roles: only one role may be the default",
        ),
        ("roles: {a: {tools: '*'}}", "roles.a.tools: Input should be a valid list"),
        ("system_prompt: ''", "system_prompt: String should have at least 1 character"),
        (
            "redis: {require_persistence: perhaps}",
            "redis.require_persistence: Input should be a valid boolean",
        ),
        ("- just a list", "expected a mapping of keys at the top, got a list"),
        ("llm: {model: [", "not valid YAML at line 1"),
        (
            "mcp: {servers: {jira: {command: npx, env: {T: '${SURELY_UNSET_VARIABLE}'}}}}",
            "mcp.servers.jira: env.T: ${SURELY_UNSET_VARIABLE} is not set in the environment",
        ),
        (
            "mcp: {servers: {x: {command: a, url: 'http://b'}}}",
            "mcp.servers.x: give either `command` (stdio) or `url` (HTTP), not both",
        ),
        (
            "mcp: {servers: {x: {prefix: x_}}}",
            "mcp: servers.x: give either `command` (stdio) or `url` (HTTP), or list the "
            "server in `servers_file`",
        ),
        (
            "mcp: {servers: {x: {url: 'http://b', transport: websocket}}}",
            "mcp.servers.x.transport: unknown transport 'websocket'; use stdio, "
            "streamable_http or sse",
        ),
        (
            "mcp: {servers: {x: {url: 'http://b', transport: stdio}}}",
            "mcp.servers.x: transport stdio needs `command`, not `url`",
        ),
        (
            "mcp: {servers: {x: {command: a, type: sse}}}",
            "mcp.servers.x: transport sse needs `url`, not `command`",
        ),
        (
            "mcp: {servers: {x: {command: a, args: ['${env:SURELY_UNSET_VARIABLE}']}}}",
            "mcp.servers.x: args[0]: ${SURELY_UNSET_VARIABLE} is not set in the environment",
        ),
        (
            "mcp: {servers: {x: {command: a, args: ['${input:token}']}}}",
            "mcp.servers.x: args[0]: ${input:token} cannot be filled in here",
        ),
        ("mcp: {servers: {x: {command: a, sampling_max_tokens: 0}}}", "sampling_max_tokens"),
        ("mcp: {servers: {x: {url: 'http://b', prefix: 'bad prefix'}}}", "mcp.servers.x.prefix"),
        (
            "mcp: {servers: {x: {command: a, sampling: {max_requests: 2}}}}",
            "mcp.servers.x: sampling: unknown key 'max_requests'",
        ),
        (
            "mcp: {servers: {x: {command: a, sampling: {max_requests_per_call: 0}}}}",
            "mcp.servers.x.sampling_max_requests_per_call",
        ),
        (
            "mcp: {servers: {x: {command: a, sampling: {max_tokens: 9}, sampling_max_tokens: 9}}}",
            "give sampling.max_tokens or sampling_max_tokens, not both",
        ),
        (
            "redis: {cluster: true, replica_acks: 1}",
            "redis: replica_acks is not for a Redis Cluster",
        ),
        ("redis: {replica_acks: -1}", "redis.replica_acks"),
        ("redis: {replica_ack_timeout_ms: 5}", "redis.replica_ack_timeout_ms"),
    ],
)
def test_errors_name_the_key(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "acme.yaml")
    assert str(caught.value).startswith("acme.yaml: ")
    assert expected in str(caught.value)


def test_sampling_as_a_switch_or_a_section() -> None:
    """``sampling.max_requests_per_call`` (and ``sampling.max_tokens``) may be written as a
    section, which switches sampling on, or flat beside ``sampling: true``."""
    servers = parse_config(
        """
mcp:
  servers:
    flat: {command: a, sampling: true, sampling_max_requests_per_call: 3}
    section: {command: a, sampling: {max_requests_per_call: 2, max_tokens: 50}}
    switched_off: {command: a, sampling: {enabled: false, max_requests_per_call: 4}}
    default: {command: a}
""",
        "acme.yaml",
    ).mcp.servers
    seen = {
        name: (s.sampling, s.sampling_max_requests_per_call, s.sampling_max_tokens)
        for name, s in servers.items()
    }
    assert seen == {
        "flat": (True, 3, 1000),
        "section": (True, 2, 50),
        "switched_off": (False, 4, 1000),
        "default": (False, 5, 1000),
    }


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.yaml")


def test_the_cli_path_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SLACK_AGENT_CONFIG", "/from/env.yaml")
    environment = Environment()
    assert config_path(None, environment) == Path("/from/env.yaml")
    assert config_path(tmp_path / "cli.yaml", environment) == tmp_path / "cli.yaml"


async def test_services_need_a_key_or_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SLACK_AGENT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        build_services()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    services = build_services()
    assert str(services.model.load().client.base_url) == "http://127.0.0.1:11434/v1/"
    await services.aclose()


async def test_environment_overrides_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("llm: {base_url: 'http://file.example/v1', model: m1, max_retries: 4}\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.example/v1")
    services = build_services(path)
    assert str(services.model.load().client.base_url) == "http://env.example/v1/"
    assert services.model.load().client.max_retries == 4
    assert services.model.model_name == "m1"
    await services.aclose()
    monkeypatch.delenv("OPENAI_BASE_URL")
    services = build_services(path)
    assert str(services.model.load().client.base_url) == "http://file.example/v1/"
    await services.aclose()


def test_a_bad_tools_module_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("tools: {modules: [acme_missing_module]}\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(
        ConfigError, match=r"tools\.modules\[0\]: cannot import 'acme_missing_module'"
    ):
        build_services(path)


def test_the_readme_example_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key of the README's complete example is a real key with a valid value."""
    monkeypatch.setenv("JIRA_TOKEN", "t")
    monkeypatch.setenv("K8S_MCP_TOKEN", "t")
    monkeypatch.setenv("GITHUB_MCP_CLIENT_ID", "c")
    monkeypatch.setenv("GITHUB_MCP_CLIENT_SECRET", "s")
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    start = readme.index("```yaml\n", readme.index("A complete example with every key"))
    example = readme[start + len("```yaml\n") : readme.index("```", start + 7)]
    config = parse_config(example, "README.md")
    assert {name: s.kind for name, s in config.mcp.servers.items()} == {
        "jira": "stdio",
        "k8s": "streamable_http",
        "legacy": "sse",
        "github": "streamable_http",
    }
    assert config.mcp.servers["github"].auth == "oauth"
    assert config.oauth.callback_url == "https://bot.example.com/oauth/callback"
    assert config.channels["C0SUPPORT"].mcp_servers == ["jira"]


def test_a_base_url_the_sdk_cannot_use_stops_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The model's client is built at its first call; its URL is checked before that."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:hunter2@[::1/v1")
    monkeypatch.delenv("SLACK_AGENT_CONFIG", raising=False)
    with pytest.raises(ConfigError, match=r"^OPENAI_BASE_URL: the model's base URL is not a URL"):
        build_services()
    monkeypatch.delenv("OPENAI_BASE_URL")
    path = tmp_path / "c.yaml"
    path.write_text("llm: {base_url: 'localhost:11434/v1'}\n")
    with pytest.raises(ConfigError, match=r"^llm\.base_url: the model's base URL must start with"):
        build_services(path)
