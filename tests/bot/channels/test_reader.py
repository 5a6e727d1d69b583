"""What a turn reads of its channel: the file's entries and the values set in Slack resolved,
the memory's notes (a DM's: the person's), all in one Redis round trip; no notes where
memory is off."""

from __future__ import annotations

import pytest

from bot.channels.config import ChannelEntry, ChannelsConfig
from bot.channels.reader import ChannelReader
from bot.process.state import State
from tests.fakes.round_trips import counting_round_trips

CHANNELS: ChannelsConfig = {
    "C0SUPPORT": ChannelEntry(instructions="Support.", tools=["search_*"]),
    "D*": ChannelEntry(memory=True),
}


def reader_of(state: State, channels: ChannelsConfig = CHANNELS) -> ChannelReader:
    return ChannelReader(channels, state.shared.channels, state.shared.memory)


@pytest.mark.cluster
async def test_settings_and_notes_of_the_channel(state: State) -> None:
    await state.shared.channels.set("T1", "C0SUPPORT", "tools", ["search_docs"], by="U0ADMIN")
    await state.shared.memory.add("T1", "C0SUPPORT", "Runbook: go/rb.", "U1", "C0SUPPORT", "k1")
    await state.shared.memory.add("T1", "C0ENG", "Not here.", "U1", "C0ENG", "k2")
    view = await reader_of(state).read("C0SUPPORT", "U1", external=False)
    assert view.settings.instructions.value == "Support."
    assert view.settings.tool_filters == (("search_*",), ("search_docs",))
    assert [n.text for n in view.notes] == ["Runbook: go/rb."]


@pytest.mark.cluster
async def test_a_dm_reads_the_persons_notes(state: State) -> None:
    await state.shared.memory.add("T1", "user:U1", "Mine.", "U1", "D0ONE", "k1")
    await state.shared.memory.add("T1", "user:U2", "Theirs.", "U2", "D0TWO", "k2")
    view = await reader_of(state).read("D0ONE", "U1", external=False)
    assert [n.text for n in view.notes] == ["Mine."]


@pytest.mark.cluster
async def test_no_notes_where_memory_is_off(state: State) -> None:
    await state.shared.memory.add("T1", "C0SUPPORT", "Saved earlier.", "U1", "C0SUPPORT", "k1")
    await state.shared.channels.set("T1", "C0SUPPORT", "memory", False, by="U0ADMIN")
    view = await reader_of(state).read("C0SUPPORT", "U1", external=False)
    assert view.settings.memory.value is False and view.notes == []
    # Without a channels section memory is off by default: nothing changes from before.
    bare = await reader_of(state, {}).read("C0OTHER", "U1", external=False)
    assert bare.notes == [] and bare.settings.memory.value is False


async def test_one_round_trip(state: State) -> None:
    await state.shared.channels.set("T1", "C0SUPPORT", "instructions", "Hi.", by="U0ADMIN")
    await state.shared.memory.add("T1", "C0SUPPORT", "A note.", "U1", "C0SUPPORT", "k1")
    await state.shared.memory.add("T1", "user:U1", "Mine.", "U1", "D0ONE", "k2")
    reader = reader_of(state)
    await reader.read("C0SUPPORT", "U1", external=False)  # the pool's connection made
    for channel in ("C0SUPPORT", "D0ONE"):
        with counting_round_trips() as trips:
            view = await reader.read(channel, "U1", external=False)
        assert trips.sent == 1, channel
        assert view.notes


def test_configured_when_the_file_has_a_channels_section(state: State) -> None:
    assert reader_of(state).configured
    assert not reader_of(state, {}).configured
