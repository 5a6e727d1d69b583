"""The ``channels:`` section: the issue's example loads; a malformed entry stops start-up with
its key's path (a bad channel key, a wrong type, instructions too long, an unknown key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.channels.config import EXTERNAL, MAX_INSTRUCTIONS_CHARS, is_glob
from bot.config.errors import ConfigError
from bot.config.loading import parse_config
from bot.config.schema import AppConfig
from bot.process.services import build_services

EXAMPLE = """
channels:
  C0SUPPORT:
    instructions: "You answer customer-support questions. Link the runbook."
    tools: ["search_*", "get_time"]
    mcp_servers: [zendesk]
    budget: {daily_tokens: 300000, daily_cost_usd: 5}
    memory: true
    locked: false
  "C0ENG*": {tools: ["deploy_*"]}
  "D*": {memory: true}
  "*": {memory: false}
  external:
    tools: [get_time, calculate]
    memory: false
"""


def test_the_issue_example_loads() -> None:
    channels = parse_config(EXAMPLE).channels
    assert list(channels) == ["C0SUPPORT", "C0ENG*", "D*", "*", EXTERNAL]
    support = channels["C0SUPPORT"]
    assert support.tools == ["search_*", "get_time"] and support.mcp_servers == ["zendesk"]
    assert support.budget is not None and support.budget.daily_tokens == 300000
    assert support.memory is True and support.locked is False
    assert channels[EXTERNAL].memory is False and channels[EXTERNAL].instructions is None


def test_the_readmes_channels_section_shows_the_issues_example() -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    start = readme.index("```yaml\n", readme.index("\n## Channels\n")) + len("```yaml\n")
    channels = parse_config(readme[start : readme.index("```", start)], "README.md").channels
    assert list(channels) == ["C0SUPPORT", EXTERNAL]
    assert channels["C0SUPPORT"] == parse_config(EXAMPLE).channels["C0SUPPORT"]
    assert channels[EXTERNAL] == parse_config(EXAMPLE).channels[EXTERNAL]


def test_no_section_is_no_entry() -> None:
    assert AppConfig().channels == {}


def errors_of(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    return str(caught.value)


def test_a_wrong_type_names_the_key_path() -> None:
    assert "channels.C0SUPPORT.tools: Input should be a valid list" in errors_of(
        "channels: {C0SUPPORT: {tools: search_*}}"
    )
    assert "channels.C0SUPPORT.memory:" in errors_of("channels: {C0SUPPORT: {memory: maybe}}")
    assert "channels.C0SUPPORT.budget.daily_tokens:" in errors_of(
        "channels: {C0SUPPORT: {budget: {daily_tokens: 0}}}"
    )


@pytest.mark.parametrize("key", ["support", "#support", "c0support", "U0ALICE", "X*", "C0 ENG"])
def test_a_key_that_is_no_channel_is_named(key: str) -> None:
    message = errors_of(f'channels: {{"{key}": {{memory: true}}}}')
    assert f"channels.{key}.[key]: not a channel ID" in message


def test_instructions_over_the_limit_stop_the_start() -> None:
    text = "x" * (MAX_INSTRUCTIONS_CHARS + 1)
    message = errors_of(f"channels: {{C0SUPPORT: {{instructions: {text}}}}}")
    assert (
        f"channels.C0SUPPORT.instructions: String should have at most {MAX_INSTRUCTIONS_CHARS}"
        in message
    )
    ok = parse_config(f"channels: {{C0SUPPORT: {{instructions: {text[:-1]}}}}}")
    assert len(ok.channels["C0SUPPORT"].instructions or "") == MAX_INSTRUCTIONS_CHARS


def test_an_unknown_key_in_an_entry_is_named() -> None:
    assert "channels.C0ENG*.tool: unknown key" in errors_of('channels: {"C0ENG*": {tool: [a]}}')


def test_an_empty_tool_glob_is_refused() -> None:
    assert "channels.C0SUPPORT.tools.0:" in errors_of('channels: {C0SUPPORT: {tools: [""]}}')


@pytest.mark.parametrize(
    ("key", "glob"),
    [
        ("C0ENG*", True),
        ("D*", True),
        ("*", True),
        ("C0E?G", True),
        ("C0[AB]X", True),
        ("C0ENG", False),
        (EXTERNAL, False),
    ],
)
def test_which_keys_are_globs(key: str, glob: bool) -> None:
    assert is_glob(key) is glob
    assert key in parse_config(f'channels: {{"{key}": {{}}}}').channels


def test_a_channels_cost_limit_without_a_price_stops_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("llm: {model: m1}\nchannels: {C0SUPPORT: {budget: {daily_cost_usd: 5}}}\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(
        ConfigError, match=r"channels\.C0SUPPORT\.budget\.daily_cost_usd: llm\.prices has no price"
    ):
        build_services(path)
