"""The ``channels:`` section of the config file: settings per channel, keyed by channel ID,
channel-ID glob (``C0ENG*``, ``D*`` for direct messages, ``*``) or ``external`` (channels
shared with another organisation). Which entries apply to a channel, and in which order:
:mod:`bot.channels.resolve`."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from permissions.budget import Budget

EXTERNAL = "external"  # the entry for channels shared with another organisation (Slack Connect)
MAX_INSTRUCTIONS_CHARS = 4000
GLOB_CHARS = frozenset("*?[")

_ID = re.compile(r"^[CDG][A-Z0-9]{2,}$")
_GLOB = re.compile(r"^[CDG*?\[][A-Z0-9*?\[\]!^-]*$")


def is_glob(key: str) -> bool:
    """A key that names channels by pattern (``C0ENG*``, ``D*``, ``*``), not one channel."""
    return any(char in GLOB_CHARS for char in key)


def _channel_key(key: str) -> str:
    if key == EXTERNAL or _ID.match(key) or (is_glob(key) and _GLOB.match(key)):
        return key
    raise ValueError(
        f"not a channel ID (C…, D… or G…), a glob of them (C0ENG*, D*, *) or {EXTERNAL!r}"
    )


ChannelKey = Annotated[str, AfterValidator(_channel_key)]
Name = Annotated[str, Field(min_length=1)]


class ChannelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instructions: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_INSTRUCTIONS_CHARS,
        description="Added to the system prompt, under a heading naming them as this "
        "channel's instructions.",
    )
    tools: list[Name] | None = Field(
        default=None,
        description='Tool name globs ("!glob" denies): narrows what roles allow, never widens.',
    )
    mcp_servers: list[Name] | None = Field(
        default=None, description="The MCP servers whose tools are offered here (default: all)."
    )
    budget: Budget | None = Field(
        default=None, description="Daily limits for the channel as a whole (everyone in it)."
    )
    memory: bool | None = Field(
        default=None,
        description="The remember tool and the channel's notes (default: on where an entry "
        "applies).",
    )
    locked: bool | None = Field(
        default=None, description="True: admins cannot change this channel's settings from Slack."
    )


ChannelsConfig = dict[ChannelKey, ChannelEntry]
