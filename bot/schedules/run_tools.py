"""A scheduled run's tools: everything its owner is offered, except the ``schedule`` tool.

A run must not make schedules: one that did could multiply itself at every run, each new
schedule made in its owner's name while nobody watches. The tool is not offered in a run,
and a call of it (named all the same) is refused with words the model can relay.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.schedules.tool import NAME
from tools.definition import Tool
from tools.errors import ToolUnavailable
from tools.toolset import Toolset

IN_A_RUN = "A scheduled run cannot make schedules: ask in a conversation."


class WithoutScheduling:
    """``inner`` without the ``schedule`` tool."""

    def __init__(self, inner: Toolset) -> None:
        self.inner = inner

    async def list_tools(self) -> Sequence[Tool]:
        return [tool for tool in await self.inner.list_tools() if tool.name != NAME]

    async def get_tool(self, name: str) -> Tool:
        if name == NAME:
            raise ToolUnavailable.forbidden(name, IN_A_RUN)
        return await self.inner.get_tool(name)
