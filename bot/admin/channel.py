"""``/agent channel``: the settings in force where it is typed, each with where it comes from
(everyone), and an admin's changes to them in the channel itself (stored in Redis through
:class:`ChannelOverrides`, which audits each with its before and after; a channel the file
locks refuses them). Also the channels with settings of their own, for the Home tab."""

from __future__ import annotations

from collections.abc import Collection

from bot.admin.channel_parsing import Change, Invalid, Reset, parse_change
from bot.admin.channel_words import changed, home_rows, locked_words, reset_words, settings_lines
from bot.admin.context import AdminStores, Caller, admin_entry
from bot.admin.parsing import Invocation
from bot.admin.reports import standing_lines
from bot.channels.config import ChannelsConfig
from bot.channels.resolve import ChannelSettings, resolve, stored_key
from bot.slack.blocks.limits import limited
from bot.state.channel_settings import parse
from permissions.patterns import matches_any
from tools.registry import ToolRegistry


class ChannelCommands:
    def __init__(
        self,
        command: str,
        config: ChannelsConfig,
        servers: Collection[str],
        registry: ToolRegistry,
        state: AdminStores,
    ) -> None:
        self.command = command
        self.config = config
        self.servers = servers  # the configured MCP servers' names
        self.registry = registry
        self.state = state

    async def settings(self, channel: str) -> ChannelSettings:
        """The settings in force in ``channel``: the file's entries and the values set in
        Slack (a direct message is never shared with another organisation)."""
        external = not channel.startswith("D") and await self.state.external(channel)
        overrides = await self.state.channels.read(channel)
        return resolve(self.config, channel, external, overrides)

    async def show(self, caller: Caller, invocation: Invocation) -> str:
        if caller.channel is None:
            return f"`{self.command} channel` shows the settings of the channel it is typed in."
        settings = await self.settings(caller.channel)
        lines = settings_lines(settings)
        budget = settings.budget.value
        if budget is not None:
            standing = await self.state.budgets.standing_of_channel(
                caller.team, caller.channel, budget
            )
            lines += standing_lines(standing, "")
        if not settings.locked.value:
            lines.append(
                f"Admins change them with `{self.command} channel <key> …` (see "
                f"`{self.command} help`)."
            )
        return "\n".join(limited(lines))

    async def change(self, caller: Caller, invocation: Invocation) -> str:
        """An admin's change (the caller's role is checked before)."""
        channel = caller.channel
        if channel is None:
            return "Change a channel's settings in the channel itself."
        request = parse_change(invocation.text, self.command, self.servers)
        if isinstance(request, Invalid):
            return request.message
        settings = await self.settings(channel)
        if settings.locked.value:
            await self.state.audit.add(admin_entry(caller, invocation, outcome="refused"))
            return locked_words(settings)
        if isinstance(request, Reset):
            key = stored_key(request.key) if request.key else None
            removed = await self.state.channels.reset(caller.team, channel, key, by=caller.user)
            return reset_words(request.key, removed)
        await self.state.channels.set(
            caller.team, channel, stored_key(request.key), request.value, caller.user
        )
        return changed(request, self._unmatched(request), channel)

    def _unmatched(self, change: Change) -> list[str]:
        if change.key != "tools":
            return []
        assert isinstance(change.value, tuple)
        names = self.registry.names()
        return [glob for glob in change.value if not matches_any(glob, names)]

    async def home_rows(self) -> list[str]:
        """For an admin's Home tab: the file's entries and the channels set in Slack (read in
        one round trip after the index)."""
        overrides = self.state.channels
        channels = await overrides.channels()
        async with overrides.client.pipeline(transaction=False) as pipe:
            for channel in channels:
                overrides.read_in(pipe, channel)
            read = await pipe.execute() if channels else []
        slack_set = {channel: parse(raw) for channel, raw in zip(channels, read, strict=True)}
        return home_rows(self.config, slack_set)
