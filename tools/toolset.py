"""What the agent loop needs from a collection of tools.

A toolset is asked twice: ``list_tools`` for what the model is offered, and ``get_tool``
again when the model calls one. Wrappers answer both the same way, so a tool that was never
offered (hallucinated, injected, switched off mid-turn) cannot run. The wrappers: the role
policy (``permissions/policy.py``), a person's approval (``tools/approval.py``) and who the
call runs for (``tools/call_context.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
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
