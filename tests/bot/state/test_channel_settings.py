"""Channels' settings set in Slack: set, read, reset, the index of channels that have any,
each change audited with before and after in the same step (on a Redis Cluster too: the
channel's hash, its shard's index and audit stream share a slot)."""

from __future__ import annotations

import json

import pytest

from bot.process.state import State
from bot.state.audit import AuditKind
from bot.state.channel_settings import STORED_KEYS, Override
from permissions.budget import Budget

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


async def test_a_value_set_is_read_with_who_and_when(state: State) -> None:
    channels = state.shared.channels
    assert await channels.read("C0SUPPORT") == {}
    assert await channels.set("T1", "C0SUPPORT", "tools", ["search_*"], by="U0ADMIN") is None
    budget = Budget(daily_tokens=1000)
    await channels.set("T1", "C0SUPPORT", "budget", budget, by="U0BOSS")
    read = await channels.read("C0SUPPORT")
    assert set(read) == {"tools", "budget"}
    assert read["tools"].value == ["search_*"] and read["tools"].by == "U0ADMIN"
    assert read["budget"].value == {"daily_tokens": 1000} and read["budget"].at > 0
    assert await channels.read("C0OTHER") == {}


async def test_setting_again_returns_the_value_it_replaced_and_audits_both(
    state: State,
) -> None:
    channels = state.shared.channels
    await channels.set("T1", "C0SUPPORT", "instructions", "Be brief.", by="U0ADMIN")
    before = await channels.set("T1", "C0SUPPORT", "instructions", "Be kind.", by="U0BOSS")
    assert isinstance(before, Override)
    assert (before.value, before.by) == ("Be brief.", "U0ADMIN")
    second, first = await state.shared.audit.latest(2)
    assert (second.kind, second.action, second.actor, second.target) == (
        AuditKind.CHANNEL,
        "set",
        "U0BOSS",
        "C0SUPPORT",
    )
    assert second.detail == {
        "key": "instructions",
        "before": json.dumps("Be brief."),
        "after": json.dumps("Be kind."),
        "team": "T1",
    }
    assert first.detail["before"] is None and first.detail["after"] == '"Be brief."'


async def test_reset_one_key_then_all_and_the_index(state: State) -> None:
    channels = state.shared.channels
    await channels.set("T1", "C0SUPPORT", "memory", False, by="U0ADMIN")
    await channels.set("T1", "C0SUPPORT", "mcp_servers", ["zendesk"], by="U0ADMIN")
    await channels.set("T1", "C0ENG", "memory", True, by="U0ADMIN")
    assert await channels.channels() == ["C0ENG", "C0SUPPORT"]

    removed = await channels.reset("T1", "C0SUPPORT", "memory", by="U0BOSS")
    assert list(removed) == ["memory"] and removed["memory"].value is False
    assert list(await channels.read("C0SUPPORT")) == ["mcp_servers"]
    assert await channels.channels() == ["C0ENG", "C0SUPPORT"]
    entry = (await state.shared.audit.latest(1))[0]
    assert (entry.action, entry.actor, entry.target) == ("reset", "U0BOSS", "C0SUPPORT")
    assert entry.detail == {"key": "memory", "before": "false", "after": None, "team": "T1"}

    assert await channels.reset("T1", "C0SUPPORT", "memory", by="U0BOSS") == {}
    removed = await channels.reset("T1", "C0SUPPORT", None, by="U0BOSS")
    assert list(removed) == ["mcp_servers"]
    assert await channels.read("C0SUPPORT") == {}
    assert await channels.channels() == ["C0ENG"]
    audited = [e for e in await state.shared.audit.latest(10) if e.action == "reset"]
    assert len(audited) == 2  # one entry per value removed, none for nothing removed


async def test_an_unknown_key_changes_nothing(state: State) -> None:
    with pytest.raises(ValueError, match="'locked' is not a channel setting"):
        await state.shared.channels.set("T1", "C0X", "locked", False, by="U0ADMIN")
    with pytest.raises(ValueError, match="'servers' is not a channel setting"):
        await state.shared.channels.reset("T1", "C0X", "servers", by="U0ADMIN")
    assert await state.shared.channels.channels() == []
    assert await state.shared.audit.latest(5) == []


async def test_every_stored_key_round_trips(state: State) -> None:
    values = {
        "instructions": 'Ünïcode — and "quotes".',
        "tools": ("a_*", "!b"),
        "mcp_servers": ["zendesk"],
        "budget": {"daily_tokens": 5, "daily_cost_usd": 0.1},
        "memory": True,
    }
    assert set(values) == set(STORED_KEYS)
    for key, value in values.items():
        await state.shared.channels.set("T1", "C0X", key, value, by="U0ADMIN")
    read = await state.shared.channels.read("C0X")
    assert {key: override.value for key, override in read.items()} == {
        **values,
        "tools": ["a_*", "!b"],
    }
    entry = (await state.shared.audit.latest(5))[-1]
    assert json.loads(entry.detail["after"]) == values["instructions"]
