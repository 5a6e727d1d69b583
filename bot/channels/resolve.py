"""The settings in force in one channel (pure): the file's entries that apply to it, in
precedence order, and the values admins set in Slack, each setting with where it comes from.

Order of the file's entries: the channel's exact ID; then, for a channel shared with another
organisation, ``external``; then the globs that match it, the longest pattern first (ties by
key, ascending), so ``*`` comes last. Each key takes the first entry in that order that sets
it. A value set in Slack comes before every file entry, except ``tools`` and ``mcp_servers``:
set in Slack they narrow further, never widen (a tool must pass the file's list *and*
Slack's), and ``locked``, which only the file sets.

Defaults: no instructions, no narrowing of tools or servers, no budget, memory on where at
least one file entry applies (so without a ``channels:`` section nothing changes), not
locked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any, Generic, Literal, TypeVar

from bot.channels.config import EXTERNAL, ChannelsConfig, is_glob
from bot.state.channel_settings import STORED_KEYS, Override
from permissions.budget import Budget
from permissions.patterns import allows

SETTABLE = ("instructions", "tools", "servers", "budget", "memory")  # /agent channel <key>
STAR = "*"
T = TypeVar("T")


def stored_key(name: str) -> str:
    """The key a ``/agent channel <name>`` setting is stored and resolved under ("servers":
    ``mcp_servers``)."""
    return "mcp_servers" if name == "servers" else name


@dataclass(frozen=True)
class Source:
    """Where a setting in force comes from."""

    kind: Literal["file", "slack", "default"]
    entry: str = ""  # the file's entry (kind "file")
    by: str = ""  # who set it in Slack (kind "slack")
    at: float = 0.0

    def words(self) -> str:
        """ "the file's entry `C0ENG*`", "set in Slack by <@U1> on <!date^…|2026-11-28>", "the
        default" (Slack's date code: each reader sees the date where they are)."""
        if self.kind == "file":
            return f"the file's entry `{self.entry}`"
        if self.kind == "slack":
            day = datetime.fromtimestamp(self.at, UTC).strftime("%Y-%m-%d")
            return f"set in Slack by <@{self.by}> on <!date^{int(self.at)}^{{date}}|{day}>"
        return "the default"


DEFAULT = Source("default")


@dataclass(frozen=True)
class Sourced(Generic[T]):
    value: T
    source: Source


@dataclass(frozen=True)
class ChannelSettings:
    channel: str
    external: bool
    instructions: Sourced[str | None]
    tools: Sourced[tuple[str, ...] | None]  # shown: Slack's when set, else the file's
    mcp_servers: Sourced[tuple[str, ...] | None]
    budget: Sourced[Budget | None]
    memory: Sourced[bool]
    memory_explicit: bool  # the file's deciding entry, or Slack, says `memory: true`
    locked: Sourced[bool]
    tool_filters: tuple[tuple[str, ...], ...] = ()  # every glob list a tool must pass
    server_filters: tuple[tuple[str, ...], ...] = ()  # every list a tool's MCP server must pass
    entries: tuple[str, ...] = ()  # the file's entries that apply, in precedence order
    set_in_slack: tuple[str, ...] = ()  # the keys with a value set in Slack

    def allows_tool(self, name: str, server: str | None) -> bool:
        """May a tool be offered (and run) here: its name passes every tool list, and a tool of
        an MCP server (``server``: its name; None for the others) passes every server list."""
        if not all(allows(patterns, name) for patterns in self.tool_filters):
            return False
        return server is None or all(allows(names, server) for names in self.server_filters)

    def may_remember(self, external_person: bool) -> bool:
        """May a note be saved here: memory is on, and a person of another organisation only
        where memory is on explicitly (not by default)."""
        return self.memory.value and (not external_person or self.memory_explicit)

    @property
    def own(self) -> bool:
        """Does the channel have settings of its own: a file entry other than ``*`` applies,
        or something was set in Slack."""
        return any(entry != STAR for entry in self.entries) or bool(self.set_in_slack)


def matching_entries(config: ChannelsConfig, channel: str, external: bool) -> list[str]:
    """The file's entries that apply to ``channel``, in precedence order."""
    found = [channel] if channel in config and not is_glob(channel) else []
    if external and EXTERNAL in config:
        found.append(EXTERNAL)
    globs = [key for key in config if is_glob(key) and fnmatchcase(channel, key)]
    found += sorted(globs, key=lambda key: (-len(key), key))
    return found


def resolve(
    config: ChannelsConfig, channel: str, external: bool, overrides: Mapping[str, Override]
) -> ChannelSettings:
    """The settings in force in ``channel`` (``external``: shared with another organisation),
    from the file's ``config`` and the values set in Slack (``overrides``)."""
    entries = matching_entries(config, channel, external)
    chain = [(name, config[name]) for name in entries]

    def from_file(key: str) -> Sourced[Any]:
        for name, entry in chain:
            value = getattr(entry, key)
            if value is not None:
                return Sourced(value, Source("file", entry=name))
        return Sourced(None, DEFAULT)

    def in_force(key: str) -> Sourced[Any]:
        override = overrides.get(key)
        if override is None:
            return from_file(key)
        return Sourced(override.value, Source("slack", by=override.by, at=override.at))

    instructions = in_force("instructions")
    budget = in_force("budget")
    if budget.source.kind == "slack":
        budget = Sourced(Budget.model_validate(budget.value), budget.source)
    memory = in_force("memory")
    memory_explicit = memory.value is True
    if memory.value is None:
        memory = Sourced(bool(entries), DEFAULT)
    locked = from_file("locked")
    tools, tool_filters = _narrowed(from_file("tools"), overrides.get("tools"))
    servers, server_filters = _narrowed(from_file("mcp_servers"), overrides.get("mcp_servers"))
    return ChannelSettings(
        channel=channel,
        external=external,
        instructions=instructions,
        tools=tools,
        mcp_servers=servers,
        budget=budget,
        memory=Sourced(bool(memory.value), memory.source),
        memory_explicit=memory_explicit,
        locked=Sourced(bool(locked.value), locked.source),
        tool_filters=tool_filters,
        server_filters=server_filters,
        entries=tuple(entries),
        set_in_slack=tuple(key for key in overrides if key in STORED_KEYS),
    )


def _narrowed(
    file: Sourced[list[str] | None], slack: Override | None
) -> tuple[Sourced[tuple[str, ...] | None], tuple[tuple[str, ...], ...]]:
    """A list that only narrows: the one shown (Slack's when set, else the file's) and every
    list a name must pass (the file's, then Slack's)."""
    filters = []
    shown: Sourced[tuple[str, ...] | None] = Sourced(None, file.source)
    if file.value is not None:
        shown = Sourced(tuple(file.value), file.source)
        filters.append(tuple(file.value))
    if slack is not None:
        value = tuple(slack.value)
        shown = Sourced(value, Source("slack", by=slack.by, at=slack.at))
        filters.append(value)
    return shown, tuple(filters)
