"""How ``/agent channel`` and the Home tab word a channel's settings (pure): each setting in
force with where it comes from, what an admin's change did, and in a few words what a file
entry or the values set in Slack set."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.admin.channel_parsing import Change, Value
from bot.budget.wording import amount
from bot.channels.config import EXTERNAL, ChannelEntry
from bot.channels.resolve import ChannelSettings, Sourced
from bot.slack.blocks.limits import shorten
from bot.state.channel_settings import Override
from permissions.budget import Budget

INSTRUCTIONS_SHOWN = 300  # characters of the instructions `/agent channel` quotes
EVERY_REPLICA = "from the next turn, on every replica"
_GLOB = set("*?[")


def place(channel: str) -> str:
    """Where the command was typed, in words."""
    return "this direct message" if channel.startswith("D") else f"<#{channel}>"


def settings_lines(settings: ChannelSettings) -> list[str]:
    """Each setting in force, its value and where it comes from."""
    shared = " (shared with another organisation)" if settings.external else ""
    lines = [f"*Settings in {place(settings.channel)}*{shared}:"]
    lines.append(
        _row("instructions", _instructions(settings.instructions.value), settings.instructions)
    )
    tools = _tools(settings.tools.value) + _within(settings.tool_filters, settings.tools.value)
    lines.append(_row("tools", tools, settings.tools))
    named = settings.mcp_servers.value
    servers = (_codes(named) if named is not None else "all") + _within(
        settings.server_filters, named
    )
    lines.append(_row("servers", servers, settings.mcp_servers))
    budget = settings.budget.value
    limit = f"{budget_words(budget)}, for everyone here together" if budget else "none"
    lines.append(_row("budget", limit, settings.budget))
    lines.append(_row("memory", "on" if settings.memory.value else "off", settings.memory))
    locked = "yes: changes from Slack are refused" if settings.locked.value else "no"
    lines.append(_row("locked", locked, settings.locked))
    return lines


def _within(filters: tuple[tuple[str, ...], ...], shown: tuple[str, ...] | None) -> str:
    """The file's list a value set in Slack narrows (both apply)."""
    ceiling = [names for names in filters if names != shown]
    if not ceiling:
        return ""
    return f", within the file's {', '.join(_codes(names) for names in ceiling)} (both apply)"


def _row(label: str, value: str, sourced: Sourced[Any]) -> str:
    return f"• *{label}*: {value} — {sourced.source.words()}"


def _instructions(text: str | None) -> str:
    if not text:
        return "none"
    return f"“{shorten(' '.join(text.split()), INSTRUCTIONS_SHOWN)}”"


def _tools(globs: tuple[str, ...] | None) -> str:
    return _codes(globs) if globs is not None else "not narrowed (each person's roles decide)"


def _codes(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names) or "none"


def budget_words(budget: Budget) -> str:
    parts = []
    if budget.daily_tokens is not None:
        parts.append(amount("tokens", budget.daily_tokens))
    if budget.daily_cost_usd is not None:
        parts.append(amount("cost", budget.daily_cost_usd))
    return " and ".join(parts) + " a day"


def changed(change: Change, unmatched: list[str], channel: str) -> str:
    """What an admin's change did (``unmatched``: tool globs that name no tool now)."""
    value: Value = change.value
    here = "this direct message" if channel.startswith("D") else "this channel"
    if change.key == "instructions":
        said = f"The instructions of {here} are set ({len(str(value)):,} characters)"
    elif change.key == "tools":
        assert isinstance(value, tuple)
        said = f"Only the tools {_codes(value)} are offered in {here} (within each person's roles)"
    elif change.key == "servers":
        assert isinstance(value, tuple)
        said = f"Of the MCP servers' tools, only those of {_codes(value)} are offered in {here}"
    elif change.key == "budget":
        assert isinstance(value, Budget)
        said = f"The budget of {here} is {budget_words(value)}, for everyone in it together"
    elif value:
        said = f"Memory is on in {here}: the bot may save notes and reads them in every thread"
    else:
        said = f"Memory is off in {here}: the bot neither saves notes nor reads them"
    warning = ""
    if unmatched:
        warning = (
            f" Note: {_codes(unmatched)} {'matches' if len(unmatched) == 1 else 'match'} no "
            "tool listed now; set anyway."
        )
    return f"{said}, {EVERY_REPLICA}.{warning}"


def reset_words(key: str | None, removed: Mapping[str, Override]) -> str:
    """What a reset did: the values set in Slack it removed."""
    if not removed:
        what = f" for `{key}`" if key else ""
        return f"Nothing was set in Slack{what} here: nothing changed."
    keys = _codes(sorted(setting_name(k) for k in removed))
    return f"Removed {keys} set in Slack: the file's entry or the default applies, {EVERY_REPLICA}."


def setting_name(key: str) -> str:
    """A stored key as ``/agent channel`` names it."""
    return "servers" if key == "mcp_servers" else key


def locked_words(settings: ChannelSettings) -> str:
    return (
        f"This channel's settings are locked by {settings.locked.source.words()}: they are "
        "changed in the config file, not from Slack."
    )


# --- the Home tab ------------------------------------------------------------------------


def entry_label(key: str) -> str:
    """A file entry's key: an exact channel as Slack links it, a glob as code."""
    if key == EXTERNAL:
        return "`external` (channels shared with another organisation)"
    if key == "*":
        return "`*` (every channel)"
    if _GLOB & set(key):
        return f"`{key}`"
    return f"<#{key}>"


def entry_words(entry: ChannelEntry) -> str:
    """What a file entry sets, in a few words."""
    return _sets(
        instructions=entry.instructions,
        tools=entry.tools,
        servers=entry.mcp_servers,
        budget=entry.budget,
        memory=entry.memory,
        locked=entry.locked,
    )


def override_words(overrides: Mapping[str, Override]) -> str:
    """What the values set in Slack for a channel set, in a few words."""
    value = {key: o.value for key, o in overrides.items()}
    budget = value.get("budget")
    return _sets(
        instructions=value.get("instructions"),
        tools=value.get("tools"),
        servers=value.get("mcp_servers"),
        budget=Budget.model_validate(budget) if isinstance(budget, dict) else budget,
        memory=value.get("memory"),
        locked=None,
    )


def _sets(
    *,
    instructions: str | None,
    tools: list[str] | tuple[str, ...] | None,
    servers: list[str] | tuple[str, ...] | None,
    budget: Budget | None,
    memory: bool | None,
    locked: bool | None,
) -> str:
    parts = []
    if instructions:
        parts.append("instructions")
    if tools is not None:
        parts.append(f"tools {shorten(_codes(tools), 120)}")
    if servers is not None:
        parts.append(f"servers {shorten(_codes(servers), 120)}")
    if budget is not None:
        parts.append(f"budget {budget_words(budget)}")
    if memory is not None:
        parts.append(f"memory {'on' if memory else 'off'}")
    if locked:
        parts.append("locked")
    return "; ".join(parts) or "nothing yet"


def home_rows(
    entries: Mapping[str, ChannelEntry], slack_set: Mapping[str, Mapping[str, Override]]
) -> list[str]:
    """The channels that have settings of their own: the file's entries by key, then the
    channels set in Slack, each with what it sets."""
    rows = [f"• {entry_label(key)} — file: {entry_words(entry)}" for key, entry in entries.items()]
    rows += [
        f"• <#{channel}> — set in Slack: {override_words(overrides)}"
        for channel, overrides in slack_set.items()
        if overrides
    ]
    return rows
