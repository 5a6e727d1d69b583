"""Which settings are in force in a channel (pure): exact ID > external > the longest glob >
``*``, each key falling through to the next entry that sets it; values set in Slack first,
except tools and servers, which Slack only narrows; the defaults with and without a
``channels:`` section; where each setting comes from, in words."""

from __future__ import annotations

from typing import Any

import pytest

from bot.channels.config import ChannelEntry, ChannelsConfig
from bot.channels.resolve import (
    SETTABLE,
    Source,
    matching_entries,
    resolve,
    stored_key,
)
from bot.state.channel_settings import Override
from permissions.budget import Budget

AT = 1795000000.0  # 2026-11-18 UTC


def config(**entries: dict[str, Any]) -> ChannelsConfig:
    return {key: ChannelEntry.model_validate(value) for key, value in entries.items()}


def slack(**values: Any) -> dict[str, Override]:
    return {key: Override(key, value, "U0ADMIN", AT) for key, value in values.items()}


FILE: dict[str, dict[str, Any]] = {
    "C0SUPPORT": {"instructions": "Support.", "tools": ["search_*", "get_time"]},
    "C0ENG*": {"instructions": "Engineering.", "memory": True},
    "C0ENGOPS*": {"tools": ["deploy_*"]},
    "C0E*": {"instructions": "Anything E.", "locked": True},
    "*": {"instructions": "Everyone.", "memory": False, "mcp_servers": ["wiki"]},
    "external": {"tools": ["get_time", "calculate"], "memory": False},
}
CHANNELS = config(**FILE)


def test_exact_id_first_then_globs_longest_first_then_star() -> None:
    assert matching_entries(CHANNELS, "C0SUPPORT", False) == ["C0SUPPORT", "*"]
    assert matching_entries(CHANNELS, "C0ENGOPS1", False) == ["C0ENGOPS*", "C0ENG*", "C0E*", "*"]
    assert matching_entries(CHANNELS, "C0OTHER", False) == ["*"]


def test_external_comes_after_the_exact_id_and_before_any_glob() -> None:
    assert matching_entries(CHANNELS, "C0ENG1", True) == ["external", "C0ENG*", "C0E*", "*"]
    assert matching_entries(CHANNELS, "C0SUPPORT", True) == ["C0SUPPORT", "external", "*"]
    assert "external" not in matching_entries(CHANNELS, "C0ENG1", False)


def test_globs_of_the_same_length_go_by_key() -> None:
    channels = config(**{"C0?X": {}, "C0A*": {}, "C0[AB]X": {}})
    # "C0[AB]X" is longest; then "C0?X" and "C0A*" (4 characters) by key: "?" < "A".
    assert matching_entries(channels, "C0AX", False) == ["C0[AB]X", "C0?X", "C0A*"]


def test_each_key_falls_through_to_the_next_entry_that_sets_it() -> None:
    settings = resolve(CHANNELS, "C0ENGOPS1", False, {})
    assert settings.tools.value == ("deploy_*",)
    assert settings.tools.source == Source("file", entry="C0ENGOPS*")
    assert settings.instructions.value == "Engineering."
    assert settings.instructions.source.entry == "C0ENG*"
    assert settings.locked.value is True and settings.locked.source.entry == "C0E*"
    assert settings.mcp_servers.value == ("wiki",) and settings.mcp_servers.source.entry == "*"
    assert settings.memory.value is True and settings.memory.source.entry == "C0ENG*"
    assert settings.budget.value is None and settings.budget.source == Source("default")


def test_a_slack_connect_channel_falls_to_external() -> None:
    settings = resolve(CHANNELS, "C0CUSTOMER", True, {})
    assert settings.tools.value == ("get_time", "calculate")
    assert settings.tools.source.entry == "external"
    assert settings.instructions.value == "Everyone."  # external sets none: `*`'s
    assert settings.allows_tool("get_time", None) and not settings.allows_tool("search_docs", None)
    # An exact entry still wins over external for the keys it sets.
    support = resolve(CHANNELS, "C0SUPPORT", True, {})
    assert support.tools.value == ("search_*", "get_time")
    assert support.memory.value is False and support.memory.source.entry == "external"


def test_values_set_in_slack_come_before_the_file() -> None:
    budget = {"daily_tokens": 1000}
    settings = resolve(
        CHANNELS,
        "C0SUPPORT",
        False,
        slack(instructions="From Slack.", budget=budget, memory=True),
    )
    assert settings.instructions.value == "From Slack."
    assert settings.instructions.source == Source("slack", by="U0ADMIN", at=AT)
    assert settings.budget.value == Budget(daily_tokens=1000)
    assert settings.memory.value is True and settings.memory_explicit


def test_slack_cannot_unlock() -> None:
    overrides = {"locked": Override("locked", False, "U0ADMIN", AT)}
    settings = resolve(CHANNELS, "C0ENG1", False, overrides)
    assert settings.locked.value is True and settings.locked.source.entry == "C0E*"


def test_tools_set_in_slack_narrow_the_file_and_never_widen_it() -> None:
    settings = resolve(CHANNELS, "C0SUPPORT", False, slack(tools=["search_*", "calculate"]))
    assert settings.tools.value == ("search_*", "calculate")  # shown: Slack's
    assert settings.tools.source.kind == "slack"
    assert settings.tool_filters == (("search_*", "get_time"), ("search_*", "calculate"))
    assert settings.allows_tool("search_docs", None)
    assert not settings.allows_tool("get_time", None)  # the file's, taken away in Slack
    assert not settings.allows_tool("calculate", None)  # Slack's, never in the file's


def test_tools_set_in_slack_narrow_where_the_file_says_nothing() -> None:
    settings = resolve(config(), "C0ANY", False, slack(tools=["get_*", "!get_secret"]))
    assert settings.allows_tool("get_time", None)
    assert not settings.allows_tool("get_secret", None)
    assert not settings.allows_tool("calculate", None)


def test_servers_narrow_only_the_tools_of_mcp_servers() -> None:
    settings = resolve(CHANNELS, "C0OTHER", False, {})
    assert settings.allows_tool("search", "wiki")
    assert not settings.allows_tool("search", "zendesk")
    assert settings.allows_tool("get_time", None)
    narrowed = resolve(CHANNELS, "C0OTHER", False, slack(mcp_servers=["zendesk"]))
    assert narrowed.mcp_servers.value == ("zendesk",)
    assert not narrowed.allows_tool("search", "zendesk")  # the file's list does not hold it
    assert not narrowed.allows_tool("search", "wiki")  # Slack's does not


def test_a_deny_glob_in_the_file_wins() -> None:
    settings = resolve(config(C0X={"tools": ["*", "!deploy_*"]}), "C0X", False, {})
    assert settings.allows_tool("get_time", None) and not settings.allows_tool("deploy_app", None)


def test_without_a_channels_section_nothing_changes() -> None:
    settings = resolve(config(), "C0ANY", True, {})
    assert settings.instructions.value is None and settings.budget.value is None
    assert settings.tools.value is None and settings.mcp_servers.value is None
    assert settings.tool_filters == () and settings.server_filters == ()
    assert settings.allows_tool("anything", "any_server")
    assert settings.memory.value is False and settings.memory.source == Source("default")
    assert not settings.may_remember(False)
    assert settings.locked.value is False and not settings.own


def test_memory_defaults_on_where_an_entry_applies() -> None:
    channels = config(C0SUPPORT={"instructions": "Support."})
    assert resolve(channels, "C0SUPPORT", False, {}).memory.value is True
    assert resolve(channels, "C0OTHER", False, {}).memory.value is False
    star = resolve(config(**{"*": {}}), "C0OTHER", False, {})
    assert star.memory.value is True and star.memory.source == Source("default")
    assert not star.memory_explicit


def test_an_admin_may_turn_memory_on_without_a_channels_section() -> None:
    settings = resolve(config(), "C0ANY", False, slack(memory=True))
    assert settings.memory.value is True and settings.memory.source.kind == "slack"
    assert settings.may_remember(True)


def test_a_person_of_another_organisation_remembers_only_where_memory_is_explicit() -> None:
    by_default = resolve(config(C0X={}), "C0X", True, {})
    assert by_default.may_remember(False) and not by_default.may_remember(True)
    explicit = resolve(config(C0X={"memory": True}), "C0X", True, {})
    assert explicit.may_remember(True)
    off = resolve(config(C0X={"memory": True}), "C0X", False, slack(memory=False))
    assert not off.may_remember(False) and not off.memory_explicit


def test_own_settings_are_a_file_entry_other_than_star_or_anything_set_in_slack() -> None:
    assert not resolve(CHANNELS, "C0OTHER", False, {}).own
    assert resolve(CHANNELS, "C0SUPPORT", False, {}).own
    assert resolve(CHANNELS, "C0ENG1", False, {}).own
    assert resolve(CHANNELS, "C0OTHER", True, {}).own  # external applies
    assert resolve(CHANNELS, "C0OTHER", False, slack(memory=True)).own


def test_the_sources_in_words() -> None:
    assert Source("file", entry="C0ENG*").words() == "the file's entry `C0ENG*`"
    assert Source("default").words() == "the default"
    assert (
        Source("slack", by="U1", at=AT).words()
        == "set in Slack by <@U1> on <!date^1795000000^{date}|2026-11-18>"
    )


@pytest.mark.parametrize(("name", "stored"), [("servers", "mcp_servers"), ("tools", "tools")])
def test_the_settable_names(name: str, stored: str) -> None:
    assert name in SETTABLE and stored_key(name) == stored
