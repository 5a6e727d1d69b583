"""Reading ``/agent channel <key> …`` (pure): the change an admin asks for, or a one-line
error naming what to fix. Nothing is checked against Redis here; servers against the
configured ones."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from bot.admin.parsing import after_first_word, did_you_mean
from bot.channels.config import MAX_INSTRUCTIONS_CHARS
from bot.channels.resolve import SETTABLE
from permissions.budget import Budget

RESET = "reset"
_ON = {"on": True, "true": True, "yes": True, "off": False, "false": False, "no": False}
_BUDGET_KEYS = ("daily_tokens", "daily_cost_usd")

Value = str | tuple[str, ...] | Budget | bool


@dataclass(frozen=True)
class Change:
    key: str  # one of SETTABLE
    value: Value


@dataclass(frozen=True)
class Reset:
    key: str | None  # None: everything set in Slack for the channel


@dataclass(frozen=True)
class Invalid:
    message: str  # one line naming what to fix


ChannelRequest = Change | Reset | Invalid


def parse_change(text: str, command: str, servers: Collection[str]) -> ChannelRequest:
    """``text`` is what follows ``channel`` (spacing kept: instructions are taken as typed);
    ``servers`` the configured MCP servers."""
    words = text.split()
    key = words[0].lower() if words else ""
    rest = after_first_word(text)
    if key == RESET:
        return _reset(rest.split(), command)
    if key == "locked":
        return Invalid(f"`locked` is set in the config file only. {_keys()}")
    if key not in SETTABLE:
        return Invalid(
            f"`{key}` is not a channel setting.{did_you_mean(key, [*SETTABLE, RESET])} {_keys()}"
        )
    usage = f"Usage: `{command} channel {key} {_USAGE[key]}`"
    if key == "instructions":
        return _instructions(rest.strip(), usage)
    names = [word.strip("`") for word in rest.split()]
    if not [name for name in names if name]:
        return Invalid(usage)
    if key == "tools":
        return Change(key, _unique(names))
    if key == "servers":
        return _servers(_unique(names), servers)
    if key == "budget":
        return _budget(names, usage)
    return _memory(names, usage)


_USAGE = {
    "instructions": "<text>",
    "tools": "<glob> [<glob>…]",
    "servers": "<name> [<name>…]",
    "budget": "daily_tokens=<n> daily_cost_usd=<x>",
    "memory": "on|off",
}


def _keys() -> str:
    settings = ", ".join(f"`{key}`" for key in SETTABLE)
    return f"Settings: {settings}; or `{RESET} [<key>]`."


def _reset(words: list[str], command: str) -> ChannelRequest:
    if not words:
        return Reset(None)
    key = words[0].lower().strip("`")
    if len(words) > 1 or key not in SETTABLE:
        hint = did_you_mean(key, SETTABLE) if len(words) == 1 else ""
        keys = ", ".join(f"`{key}`" for key in SETTABLE)
        return Invalid(f"Usage: `{command} channel {RESET} [<key>]` with a key of {keys}.{hint}")
    return Reset(key)


def _instructions(text: str, usage: str) -> ChannelRequest:
    if not text:
        return Invalid(usage)
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        return Invalid(
            f"Instructions are at most {MAX_INSTRUCTIONS_CHARS:,} characters and these are "
            f"{len(text):,}: shorten them."
        )
    return Change("instructions", text)


def _servers(names: tuple[str, ...], known: Collection[str]) -> ChannelRequest:
    if not known:
        return Invalid("No MCP server is configured, so there is no server to choose.")
    for name in names:
        if name not in known:
            listed = ", ".join(f"`{server}`" for server in sorted(known))
            return Invalid(
                f"`{name}` is not a configured MCP server.{did_you_mean(name, known)} "
                f"Servers: {listed}."
            )
    return Change("servers", names)


def _budget(words: list[str], usage: str) -> ChannelRequest:
    given: dict[str, int | float] = {}
    for word in words:
        name, equals, value = word.partition("=")
        name = name.lower()
        if not equals or name not in _BUDGET_KEYS:
            hint = did_you_mean(name, _BUDGET_KEYS)
            return Invalid(f"`{word}` is not a budget setting.{hint} {usage}")
        number = _positive(value, whole=name == "daily_tokens")
        if number is None:
            kind = "a positive whole number" if name == "daily_tokens" else "a positive number"
            return Invalid(f"`{name}` must be {kind}, not `{value}`.")
        given[name] = number
    return Change("budget", Budget.model_validate(given))


def _positive(text: str, *, whole: bool) -> int | float | None:
    cleaned = text.replace(",", "").replace("_", "").removeprefix("$")
    try:
        number: int | float = int(cleaned) if whole else float(cleaned)
    except ValueError:
        return None
    return number if number > 0 and math.isfinite(number) else None


def _memory(words: list[str], usage: str) -> ChannelRequest:
    if len(words) != 1 or words[0].lower() not in _ON:
        return Invalid(usage)
    return Change("memory", _ON[words[0].lower()])


def _unique(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name in names if name))
