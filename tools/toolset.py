"""What the agent loop needs from a collection of tools, and thin policy wrappers over one.

A toolset is asked twice: ``list_tools`` for what the model is offered, and ``get_tool``
again when the model calls one. Wrappers answer both the same way, so a tool that was never
offered (hallucinated, injected, switched off mid-turn) cannot run.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from tools.definition import Tool
from tools.errors import ToolUnavailable


class Toolset(Protocol):
    async def list_tools(self) -> Sequence[Tool]:
        """The tools the model may be offered now."""
        ...

    async def get_tool(self, name: str) -> Tool:
        """The tool to run for a call, or raise :class:`ToolUnavailable`."""
        ...


Predicate = Callable[[Tool], bool | Awaitable[bool]]


class FilteredToolset:
    """Only the tools ``allow`` accepts, both when listing and when running."""

    def __init__(self, inner: Toolset, allow: Predicate, reason: str = "") -> None:
        self.inner = inner
        self.allow = allow
        self.reason = reason

    async def _allowed(self, tool: Tool) -> bool:
        verdict = self.allow(tool)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    async def list_tools(self) -> Sequence[Tool]:
        return [t for t in await self.inner.list_tools() if await self._allowed(t)]

    async def get_tool(self, name: str) -> Tool:
        tool = await self.inner.get_tool(name)
        if not await self._allowed(tool):
            raise ToolUnavailable.forbidden(name, self.reason)
        return tool


class StaticToolset:
    """A fixed list of tools (tests, scripts)."""

    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self._tools = {t.name: t for t in tools}

    async def list_tools(self) -> Sequence[Tool]:
        return list(self._tools.values())

    async def get_tool(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise ToolUnavailable.unknown(name) from None
