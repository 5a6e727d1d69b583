"""Tools without the ``schedule`` tool, where no schedule may be made: a scheduled run, and
the console.

A run must not make schedules: one that did could multiply itself at every run, each new
schedule made in its owner's name while nobody watches. The console has no Slack
conversation for runs to post in. The tool is not offered there, and a call of it (named all
the same) is refused with words the model can relay.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.schedules.tool import NAME
from tools.definition import Tool
from tools.errors import ToolUnavailable
from tools.toolset import Toolset

IN_A_RUN = "A scheduled run cannot make schedules: ask in a conversation."
IN_THE_CONSOLE = "Schedules are made in Slack, where their runs post; not in the console."


class WithoutScheduling:
    """``inner`` without the ``schedule`` tool; ``reason``: what a call of it is told."""

    def __init__(self, inner: Toolset, reason: str = IN_A_RUN) -> None:
        self.inner = inner
        self.reason = reason

    async def list_tools(self) -> Sequence[Tool]:
        return [tool for tool in await self.inner.list_tools() if tool.name != NAME]

    async def get_tool(self, name: str) -> Tool:
        if name == NAME:
            raise ToolUnavailable.forbidden(name, self.reason)
        return await self.inner.get_tool(name)
