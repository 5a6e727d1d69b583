"""``/agent channel`` on the real Redis: everyone sees the settings in force where they type
it, each with where it comes from (and a budget with today's spend against it); an admin's
change is stored through ChannelOverrides (audited with its before and after) and names what
changed; a locked channel, a non-admin and bad input change nothing."""

from __future__ import annotations

import json

import pytest

from bot.admin.context import Caller
from bot.channels.resolve import resolve
from bot.process.state import State
from bot.state.audit import AuditKind
from tests.bot.admin.channels_kit import ADMIN, ALICE, CHANNELS, admin_commands, audited

SUPPORT_SHOWN = [
    "*Settings in <#C0SUPPORT>*:",
    "• *instructions*: “You answer customer-support questions. Link the runbook.” — the "
    "file's entry `C0SUPPORT`",
    "• *tools*: `search_*`, `get_time` — the file's entry `C0SUPPORT`",
    "• *servers*: `zendesk` — the file's entry `C0SUPPORT`",
    "• *budget*: 300,000 tokens and $5.00 a day, for everyone here together — the file's "
    "entry `C0SUPPORT`",
    "• *memory*: on — the file's entry `C0SUPPORT`",
    "• *locked*: no — the default",
]


async def test_everyone_sees_each_setting_and_where_it_comes_from(state: State) -> None:
    admin = admin_commands(state)
    shown = (await admin.run(ALICE, "channel")).text.splitlines()
    assert shown[:7] == SUPPORT_SHOWN
    assert shown[7].startswith("*Spending limits today* (they reset at 00:00 UTC on ")
    assert shown[8:10] == [
        "• 0 tokens used of this channel's daily limit of 300,000 tokens (for everyone in "
        "<#C0SUPPORT> together)",
        "• $0.00 used of this channel's daily limit of $5.00 (for everyone in <#C0SUPPORT> "
        "together)",
    ]
    assert shown[10] == "Admins change them with `/agent channel <key> …` (see `/agent help`)."
    # A glob's entry, and the defaults; a channel's own spend counts against its budget.
    eng = (await admin.run(Caller("T1", "UALICE", "C0ENG1", "T1"), "channel")).text
    assert "• *tools*: `get_*`, `calculate` — the file's entry `C0ENG*`" in eng
    assert "• *memory*: on — the default" in eng and "Spending" not in eng


async def test_a_shared_channel_says_so_and_falls_to_external(state: State) -> None:
    admin = admin_commands(state, shared=frozenset({"C0ACME"}))
    shown = (await admin.run(Caller("T1", "UALICE", "C0ACME", "T1"), "channel")).text
    assert shown.startswith("*Settings in <#C0ACME>* (shared with another organisation):")
    assert "• *tools*: `get_time` — the file's entry `external`" in shown
    assert "• *memory*: off — the file's entry `external`" in shown


async def test_a_dm_shows_the_dm_settings(state: State) -> None:
    admin = admin_commands(state, channels={"D*": {"memory": True}})
    shown = (await admin.run(Caller("T1", "UALICE", "D0ALICE", "T1"), "channel")).text
    assert shown.startswith("*Settings in this direct message*:")
    assert "• *memory*: on — the file's entry `D*`" in shown
    assert "• *tools*: not narrowed (each person's roles decide) — the default" in shown


async def test_an_admin_sets_each_key_and_it_is_in_force_and_audited(state: State) -> None:
    admin = admin_commands(state)
    replies = [
        (await admin.run(ADMIN, text)).text
        for text in (
            "channel instructions Answer in French.\n  Always.",
            "channel tools get_time nope_*",
            "channel servers zendesk",
            "channel budget daily_tokens=1000",
            "channel memory off",
        )
    ]
    assert replies == [
        "The instructions of this channel are set (27 characters), from the next turn, on "
        "every replica.",
        "Only the tools `get_time`, `nope_*` are offered in this channel (within each "
        "person's roles), from the next turn, on every replica. Note: `nope_*` matches no "
        "tool listed now; set anyway.",
        "Of the MCP servers' tools, only those of `zendesk` are offered in this channel, "
        "from the next turn, on every replica.",
        "The budget of this channel is 1,000 tokens a day, for everyone in it together, from "
        "the next turn, on every replica.",
        "Memory is off in this channel: the bot neither saves notes nor reads them, from the "
        "next turn, on every replica.",
    ]
    overrides = await state.shared.channels.read("C0SUPPORT")
    settings = resolve(admin.channel.config, "C0SUPPORT", False, overrides)
    assert settings.instructions.value == "Answer in French.\n  Always."
    assert settings.tool_filters == (("search_*", "get_time"), ("get_time", "nope_*"))
    assert settings.budget.value is not None and settings.budget.value.daily_tokens == 1000
    assert settings.budget.value.daily_cost_usd is None
    assert settings.memory.value is False
    assert {o.by for o in overrides.values()} == {"UADMIN"}
    entries = await audited(state, AuditKind.CHANNEL)
    assert [(e.action, e.target, e.detail["key"]) for e in entries] == [
        ("set", "C0SUPPORT", key)
        for key in ("instructions", "tools", "mcp_servers", "budget", "memory")
    ]
    assert json.loads(entries[1].detail["after"]) == ["get_time", "nope_*"]
    # Shown with where it comes from: Slack's, within the file's list.
    shown = (await admin.run(ALICE, "channel")).text
    assert (
        "• *tools*: `get_time`, `nope_*`, within the file's `search_*`, `get_time` (both "
        "apply) — set in Slack by <@UADMIN> on <!date^"
    ) in shown
    assert "• *memory*: off — set in Slack by <@UADMIN>" in shown
    assert await audited(state, AuditKind.ADMIN) == []  # the store's entries say it all


async def test_reset_one_key_or_everything_set_in_slack(state: State) -> None:
    admin = admin_commands(state)
    await admin.run(ADMIN, "channel servers zendesk")
    await admin.run(ADMIN, "channel memory off")
    assert (await admin.run(ADMIN, "channel reset servers")).text == (
        "Removed `servers` set in Slack: the file's entry or the default applies, from the "
        "next turn, on every replica."
    )
    assert list(await state.shared.channels.read("C0SUPPORT")) == ["memory"]
    assert (await admin.run(ADMIN, "channel reset servers")).text == (
        "Nothing was set in Slack for `servers` here: nothing changed."
    )
    assert (await admin.run(ADMIN, "channel reset")).text.startswith("Removed `memory` set")
    assert await state.shared.channels.read("C0SUPPORT") == {}
    assert await state.shared.channels.channels() == []
    assert (await admin.run(ALICE, "channel")).text.splitlines()[:7] == SUPPORT_SHOWN
    resets = [e for e in await audited(state, AuditKind.CHANNEL) if e.action == "reset"]
    assert [e.detail["key"] for e in resets] == ["mcp_servers", "memory"]


async def test_a_locked_channel_refuses_every_change(state: State) -> None:
    admin = admin_commands(state)
    locked = Caller("T1", "UADMIN", "C0LOCKED", "T1")
    for text in ("channel memory on", "channel tools get_time", "channel reset"):
        assert (await admin.run(locked, text)).text == (
            "This channel's settings are locked by the file's entry `C0LOCKED`: they are "
            "changed in the config file, not from Slack."
        )
    assert await state.shared.channels.read("C0LOCKED") == {}
    assert await audited(state, AuditKind.CHANNEL) == []
    refused = await audited(state, AuditKind.ADMIN)
    assert [(e.action, e.outcome, e.target) for e in refused] == [
        ("channel change", "refused", "memory on"),
        ("channel change", "refused", "tools get_time"),
        ("channel change", "refused", "reset"),
    ]
    shown = (await admin.run(locked, "channel")).text
    assert "• *locked*: yes: changes from Slack are refused — the file's entry `C0LOCKED`" in shown
    assert "Admins change them" not in shown


async def test_a_non_admin_is_refused_and_audited(state: State) -> None:
    admin = admin_commands(state)
    reply = await admin.run(ALICE, "channel tools get_time")
    assert reply.text == (
        "Sorry, `/agent channel tools` is only for admins. `/agent help` shows what you can use."
    )
    assert await state.shared.channels.read("C0SUPPORT") == {}
    [entry] = await audited(state, AuditKind.ADMIN)
    assert (entry.actor, entry.action, entry.outcome) == ("UALICE", "channel change", "refused")


async def test_bad_input_changes_nothing(state: State) -> None:
    admin = admin_commands(state)
    replies = [
        (await admin.run(ADMIN, text)).text
        for text in (
            "channel toolz get_time",
            "channel budget daily_tokens=-5",
            "channel budget daily_cost_usd=five",
            "channel instructions " + "x" * 4001,
            "channel servers zendsk",
            "channel memory sometimes",
        )
    ]
    assert replies == [
        "`toolz` is not a channel setting. Did you mean `tools`? Settings: `instructions`, "
        "`tools`, `servers`, `budget`, `memory`; or `reset [<key>]`.",
        "`daily_tokens` must be a positive whole number, not `-5`.",
        "`daily_cost_usd` must be a positive number, not `five`.",
        "Instructions are at most 4,000 characters and these are 4,001: shorten them.",
        "`zendsk` is not a configured MCP server. Did you mean `zendesk`? Servers: `github`, "
        "`zendesk`.",
        "Usage: `/agent channel memory on|off`",
    ]
    assert await state.shared.channels.read("C0SUPPORT") == {}
    assert await state.shared.channels.channels() == []
    assert await audited(state, AuditKind.CHANNEL) == []


async def test_help_lists_the_channel_commands_and_admins_see_the_changes(state: State) -> None:
    admin = admin_commands(state)
    everyone = (await admin.run(ALICE, "help")).text
    admins = (await admin.run(ADMIN, "help")).text
    for line in ("`/agent channel` — the settings in force here", "`/agent memory`", "forget <id>"):
        assert line in everyone and line in admins
    assert "channel instructions <text>" not in everyone
    assert "• `/agent channel instructions <text>` / `tools <glob> …` / `servers <name> …`" in (
        admins
    )
    assert "`/agent forget all` — empty this channel's memory" in admins
    # `channel change` is no name a person types: a typo is never pointed at it.
    assert "Did you mean `/agent channel`?" in (await admin.run(ALICE, "chanel")).text


@pytest.mark.cluster
async def test_the_home_tab_rows_name_the_file_entries_and_the_channels_set_in_slack(
    state: State,
) -> None:
    admin = admin_commands(state)
    await admin.run(Caller("T1", "UADMIN", "C0OTHER", "T1"), "channel memory on")
    await admin.run(Caller("T1", "UADMIN", "C0OTHER", "T1"), "channel tools get_*")
    for n in range(8):  # channels in several shards of a cluster, read in one pipeline
        await admin.run(Caller("T1", "UADMIN", f"C0MORE{n}", "T1"), "channel memory off")
    rows = await admin.channel.home_rows()
    assert rows[4:12] == [f"• <#C0MORE{n}> — set in Slack: memory off" for n in range(8)]
    assert rows[:4] + rows[12:] == [
        "• <#C0SUPPORT> — file: instructions; tools `search_*`, `get_time`; servers "
        "`zendesk`; budget 300,000 tokens and $5.00 a day; memory on",
        "• `C0ENG*` — file: tools `get_*`, `calculate`",
        "• <#C0LOCKED> — file: instructions; locked",
        "• `external` (channels shared with another organisation) — file: tools `get_time`; "
        "memory off",
        "• <#C0OTHER> — set in Slack: tools `get_*`; memory on",
    ]
    assert set(CHANNELS) == {"C0SUPPORT", "C0ENG*", "C0LOCKED", "external"}
