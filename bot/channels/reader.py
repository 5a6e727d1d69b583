"""What a turn reads of its channel, in one Redis round trip: the values admins set in Slack
and the memory's notes (a non-transactional pipeline of both reads: they may live in two
slots of a cluster, and neither needs the other's moment), resolved with the file's
``channels:`` section into the settings in force."""

from __future__ import annotations

from dataclasses import dataclass

from bot.channels.config import ChannelsConfig
from bot.channels.resolve import ChannelSettings, resolve
from bot.state import channel_memory, channel_settings
from bot.state.channel_memory import ChannelMemory, Note, memory_scope
from bot.state.channel_settings import ChannelOverrides


@dataclass(frozen=True)
class ChannelView:
    settings: ChannelSettings
    notes: list[Note]  # newest first; [] where memory is off


class ChannelReader:
    def __init__(
        self, config: ChannelsConfig, overrides: ChannelOverrides, memory: ChannelMemory
    ) -> None:
        self.config = config
        self.overrides = overrides
        self.memory = memory

    @property
    def configured(self) -> bool:
        """Does the file have a ``channels:`` section (with any entry)."""
        return bool(self.config)

    async def read(self, channel: str, user: str, external: bool) -> ChannelView:
        """The settings in force in ``channel`` for ``user``'s turn (``external``: the channel
        is shared with another organisation), and the notes of its memory (in a DM, the
        person's)."""
        async with self.overrides.client.pipeline(transaction=False) as pipe:
            self.overrides.read_in(pipe, channel)
            self.memory.notes_in(pipe, memory_scope(channel, user))
            settings_read, notes_read = await pipe.execute()
        settings = resolve(self.config, channel, external, channel_settings.parse(settings_read))
        notes = channel_memory.parse(notes_read) if settings.memory.value else []
        return ChannelView(settings, notes)
