"""``/agent channel``, ``memory``, ``forget`` and the Home tab end to end: signed slash
commands and events to the real app (fake Slack, real Redis). Each setting is named with its
source; an admin's change on one replica is what another replica reads for its next turn; a
locked entry refuses; a non-admin is refused; bad input changes nothing; the Home tab shows
admins the channels with settings of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.channels.reader import ChannelReader
from bot.state.audit import AuditKind
from tests.fakes.llm_server import FakeLLM
from tests.fakes.slack_harness import SlackHarness
from tests.fakes.slack_server import TEAM, FakeSlack

ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["get_time", "calculate"]},
}
CHANNELS: dict[str, Any] = {
    "C0CHAN": {"instructions": "You answer support questions.", "memory": True},
    "C0*": {"tools": ["get_time"], "budget": {"daily_tokens": 50000}},
}
CONFIG: dict[str, Any] = {"roles": ROLES, "channels": CHANNELS}


async def test_channel_names_each_source(slack_app: SlackHarness) -> None:
    await slack_app.start(**CONFIG)
    before = (await slack_app.command("channel"))["text"]
    assert "• *instructions*: “You answer support questions.” — the file's entry `C0CHAN`" in (
        before
    )
    assert "• *tools*: `get_time` — the file's entry `C0*`" in before
    assert "• *servers*: all — the default" in before
    assert "• 0 tokens used of this channel's daily limit of 50,000 tokens" in before

    reply = await slack_app.command("channel memory off", user="U0ADMIN")
    assert reply["response_type"] == "ephemeral"
    assert reply["text"].startswith("Memory is off in this channel")
    after = (await slack_app.command("channel"))["text"]
    assert "• *memory*: off — set in Slack by <@U0ADMIN> on <!date^" in after


@pytest.mark.cluster
async def test_a_change_on_one_replica_is_read_by_another(
    slack_app: SlackHarness,
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    key_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The turn's side reads a channel with ChannelReader (ch-turn's turn is not on this
    branch): replica B's reader sees replica A's change at once."""
    replica_a = await slack_app.start(with_worker=False, **CONFIG)
    replica_b = SlackHarness(
        fake_slack,
        fake_llm,
        slack_app.redis_url,
        key_prefix,
        tmp_path,
        monkeypatch,
        slack_app.redis_settings,
    )
    await replica_b.start(with_worker=False, **CONFIG)
    try:
        assert replica_b.services is not None
        shared = replica_b.state.shared
        reader = ChannelReader(replica_b.services.config.channels, shared.channels, shared.memory)
        before = await reader.read("C0CHAN", "U0ALICE", external=False)
        assert before.settings.instructions.value == "You answer support questions."

        typed = "channel instructions  Answer in French.\n\nLink the runbook."
        reply = await replica_a.command(typed, user="U0ADMIN")
        assert reply["text"].startswith("The instructions of this channel are set")
        await replica_a.command("channel tools get_time calculate", user="U0ADMIN")

        after = await reader.read("C0CHAN", "U0ALICE", external=False)
        assert after.settings.instructions.value == "Answer in French.\n\nLink the runbook."
        assert after.settings.instructions.source.by == "U0ADMIN"
        # Slack narrows within the file's `C0*` list: calculate passes Slack's, not the file's.
        assert after.settings.allows_tool("get_time", None)
        assert not after.settings.allows_tool("calculate", None)
        [change] = [
            e
            for e in await shared.audit.latest(20)
            if e.kind is AuditKind.CHANNEL and e.detail["key"] == "instructions"
        ]
        assert (change.actor, change.target, change.detail["before"]) == (
            "U0ADMIN",
            "C0CHAN",
            None,
        )
    finally:
        await replica_b.stop()


async def test_a_locked_entry_refuses_and_a_non_admin_is_refused(slack_app: SlackHarness) -> None:
    locked = {**CHANNELS, "C0CHAN": {**CHANNELS["C0CHAN"], "locked": True}}
    await slack_app.start(**{**CONFIG, "channels": locked})
    reply = await slack_app.command("channel memory off", user="U0ADMIN")
    assert reply["text"] == (
        "This channel's settings are locked by the file's entry `C0CHAN`: they are changed "
        "in the config file, not from Slack."
    )
    refused = await slack_app.command("channel reset", user="U0ALICE")
    assert refused["text"].startswith("Sorry, `/agent channel reset` is only for admins.")
    assert await slack_app.state.shared.channels.channels() == []
    audit = (await slack_app.command("audit 5", user="U0ADMIN"))["text"]
    assert "<@U0ALICE> admin `channel change` `reset` → refused" in audit
    assert "<@U0ADMIN> admin `channel change` `memory off` → refused" in audit


async def test_bad_input_changes_nothing(slack_app: SlackHarness) -> None:
    await slack_app.start(**CONFIG)
    for text, said in [
        ("channel budget daily_tokens=lots", "`daily_tokens` must be a positive whole number"),
        ("channel instructions " + "x" * 4001, "Instructions are at most 4,000 characters"),
        ("channel colour blue", "`colour` is not a channel setting."),
        ("channel servers wiki", "No MCP server is configured"),
    ]:
        assert (await slack_app.command(text, user="U0ADMIN"))["text"].startswith(said)
    assert await slack_app.state.shared.channels.channels() == []
    assert await slack_app.state.shared.channels.read("C0CHAN") == {}


async def test_memory_and_forget(slack_app: SlackHarness) -> None:
    await slack_app.start(**CONFIG)
    memory = slack_app.state.shared.memory
    await memory.add(TEAM, "C0CHAN", "Refunds go to Bob.", "U0ALICE", "C0CHAN", "k1")
    listed = (await slack_app.command("memory", user="U0BOB"))["text"]
    assert "• `n1` — “Refunds go to Bob.” — <@U0ALICE>" in listed
    refused = (await slack_app.command("forget n1", user="U0BOB"))["text"]
    assert refused.startswith("Sorry, only <@U0ALICE>, who saved note `n1`")
    forgot = (await slack_app.command("forget n1", user="U0ALICE"))["text"]
    assert forgot == "Forgot note `n1`: “Refunds go to Bob.”"
    assert await memory.notes("C0CHAN") == []


async def test_the_home_tab_shows_admins_the_channels_with_settings(
    slack_app: SlackHarness,
) -> None:
    await slack_app.start(**CONFIG)
    await slack_app.command("channel memory off", user="U0ADMIN")
    for user in ("U0ADMIN", "U0ALICE"):
        opened = {"type": "app_home_opened", "user": user, "tab": "home", "event_ts": "1.1"}
        assert (await slack_app.post(slack_app.envelope(opened)))[0] == 200
    await slack_app.after_acks()
    views = {
        call.args["user_id"]: json.dumps(call.args["view"], ensure_ascii=False)
        for call in slack_app.slack.calls_to("views.publish")
    }
    assert "Channels with settings of their own" in views["U0ADMIN"]
    assert "• <#C0CHAN> — file: instructions; memory on" in views["U0ADMIN"]
    assert "• `C0*` — file: tools `get_time`; budget 50,000 tokens a day" in views["U0ADMIN"]
    assert "• <#C0CHAN> — set in Slack: memory off" in views["U0ADMIN"]
    assert "Channels with settings" not in views["U0ALICE"]
