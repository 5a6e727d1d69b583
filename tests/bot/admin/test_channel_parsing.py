"""``/agent channel <key> …`` read into a change (pure): instructions as typed, tools and
servers as lists, a budget of positive numbers, memory on or off, a reset; anything else a
one-line error naming what to fix."""

from __future__ import annotations

import pytest

from bot.admin.channel_parsing import Change, Invalid, Reset, parse_change
from bot.admin.parsing import CHANNEL_CHANGE, parse
from permissions.budget import Budget

SERVERS = ("zendesk", "github")


def change(text: str) -> Change | Reset | Invalid:
    return parse_change(text, "/agent", SERVERS)


def test_a_channel_change_is_one_subcommand_and_keeps_the_text_as_typed() -> None:
    typed = parse("channel  instructions   Answer in French.\n\n  Link the runbook.  ")
    assert typed.name == CHANNEL_CHANGE and typed.said == "channel instructions"
    assert typed.text == "  instructions   Answer in French.\n\n  Link the runbook.  "
    assert change(typed.text) == Change("instructions", "Answer in French.\n\n  Link the runbook.")
    shown = parse("Channel")
    assert (shown.name, shown.args) == ("channel", [])
    assert parse("tools all  x").text == "  x"


def test_instructions_over_4000_characters_are_refused_in_one_line() -> None:
    assert change("instructions " + "x" * 4000) == Change("instructions", "x" * 4000)
    too_long = change("instructions " + "x" * 4001)
    assert too_long == Invalid(
        "Instructions are at most 4,000 characters and these are 4,001: shorten them."
    )
    assert change("instructions   ") == Invalid("Usage: `/agent channel instructions <text>`")


def test_tools_and_servers_are_lists_and_servers_must_be_configured() -> None:
    assert change("tools search_* `get_time` search_* !search_payroll") == Change(
        "tools", ("search_*", "get_time", "!search_payroll")
    )
    assert change("tools") == Invalid("Usage: `/agent channel tools <glob> [<glob>…]`")
    assert change("servers zendesk") == Change("servers", ("zendesk",))
    assert change("servers zendesk gitub") == Invalid(
        "`gitub` is not a configured MCP server. Did you mean `github`? "
        "Servers: `github`, `zendesk`."
    )
    assert parse_change("servers x", "/agent", ()) == Invalid(
        "No MCP server is configured, so there is no server to choose."
    )


def test_a_budget_is_either_or_both_positive_numbers() -> None:
    assert change("budget daily_tokens=300000") == Change("budget", Budget(daily_tokens=300000))
    assert change("budget daily_tokens=300,000 daily_cost_usd=$5.5") == Change(
        "budget", Budget(daily_tokens=300000, daily_cost_usd=5.5)
    )
    assert change("budget daily_tokens=0") == Invalid(
        "`daily_tokens` must be a positive whole number, not `0`."
    )
    assert change("budget daily_tokens=1.5") == Invalid(
        "`daily_tokens` must be a positive whole number, not `1.5`."
    )
    for bad in ("-1", "abc", "nan", "inf", ""):
        assert change(f"budget daily_cost_usd={bad}") == Invalid(
            f"`daily_cost_usd` must be a positive number, not `{bad}`."
        )
    assert change("budget daily_token=5") == Invalid(
        "`daily_token=5` is not a budget setting. Did you mean `daily_tokens`? "
        "Usage: `/agent channel budget daily_tokens=<n> daily_cost_usd=<x>`"
    )
    assert change("budget") == Invalid(
        "Usage: `/agent channel budget daily_tokens=<n> daily_cost_usd=<x>`"
    )


@pytest.mark.parametrize(("word", "on"), [("on", True), ("OFF", False), ("true", True)])
def test_memory_is_on_or_off(word: str, on: bool) -> None:
    assert change(f"memory {word}") == Change("memory", on)


def test_memory_takes_one_word() -> None:
    assert change("memory maybe") == Invalid("Usage: `/agent channel memory on|off`")
    assert change("memory on off") == Invalid("Usage: `/agent channel memory on|off`")


def test_reset_one_key_or_all() -> None:
    assert change("reset") == Reset(None)
    assert change("reset Tools") == Reset("tools")
    assert change("reset tols") == Invalid(
        "Usage: `/agent channel reset [<key>]` with a key of `instructions`, `tools`, "
        "`servers`, `budget`, `memory`. Did you mean `tools`?"
    )


def test_an_unknown_key_names_the_valid_ones() -> None:
    assert change("instrucions be nice") == Invalid(
        "`instrucions` is not a channel setting. Did you mean `instructions`? Settings: "
        "`instructions`, `tools`, `servers`, `budget`, `memory`; or `reset [<key>]`."
    )
    assert change("locked true") == Invalid(
        "`locked` is set in the config file only. Settings: `instructions`, `tools`, "
        "`servers`, `budget`, `memory`; or `reset [<key>]`."
    )
