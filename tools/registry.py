"""The registry: every tool the bot knows, from built-ins and user modules."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from tools.builtin import builtin_tools
from tools.config import ToolsConfig
from tools.definition import Tool
from tools.errors import ToolDefinitionError, ToolUnavailable

log = logging.getLogger(__name__)


class ToolSource(Protocol):
    """Tools that come and go (MCP servers): what is available right now."""

    def tools(self) -> Sequence[Tool]: ...

    def get(self, name: str) -> Tool | None: ...


class ToolRegistry:
    """Tools by name. Also a :class:`tools.toolset.Toolset` offering every tool.

    Python tools (built-ins, modules) are fixed at start-up; sources such as MCP servers add
    the tools they have right now. A source's tool whose name a fixed tool already has is
    left out, with a warning.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: list[ToolSource] = []
        self._shadowed: set[str] = set()

    def add(self, tool: Tool, source: str | None = None) -> Tool:
        entry = tool.with_source(source) if source else tool
        existing = self._tools.get(entry.name)
        if existing is not None:
            raise ToolDefinitionError(
                f"two tools are named {entry.name!r}: one from {existing.source}, "
                f"one from {entry.source}; rename one with @tool(name=...)"
            )
        self._tools[entry.name] = entry
        return entry

    def add_all(self, tools: Iterable[Tool], source: str | None = None) -> None:
        for tool in tools:
            self.add(tool, source)

    def load_module(self, module_name: str) -> list[Tool]:
        """Import ``module_name`` and add every module-level ``@tool`` defined in it.

        Tools it merely imports from elsewhere (a built-in, another module) are not added
        again, so ``from tools.builtin import calculate`` in a user module is harmless.
        """
        module = importlib.import_module(module_name)
        found = [
            value
            for value in vars(module).values()
            if isinstance(value, Tool)
            and (value.fn is None or getattr(value.fn, "__module__", None) == module_name)
        ]
        if not found:
            raise ToolDefinitionError(f"module {module_name!r} defines no @tool functions")
        added = []
        for tool in found:
            added.append(self.add(tool, f"module {module_name}"))
        return added

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    def names(self) -> list[str]:
        """Every tool available now (fixed ones first)."""
        return [tool.name for tool in self.current()]

    def current(self) -> list[Tool]:
        tools = list(self._tools.values())
        for source in self._sources:
            for tool in source.tools():
                if tool.name in self._tools:
                    if tool.name not in self._shadowed:
                        self._shadowed.add(tool.name)
                        log.warning(
                            "%s offers a tool named %s, which %s already has; "
                            "leaving it out (give the server a prefix)",
                            tool.source,
                            tool.name,
                            self._tools[tool.name].source,
                        )
                    continue
                tools.append(tool)
        return tools

    def get(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        if tool is not None:
            return tool
        for source in self._sources:
            found = source.get(name)
            if found is not None:
                return found
        return None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.current())

    async def list_tools(self) -> Sequence[Tool]:
        return self.current()

    async def get_tool(self, name: str) -> Tool:
        tool = self.get(name)
        if tool is None:
            raise ToolUnavailable.unknown(name)
        return tool


def build_registry(config: ToolsConfig, provided: Mapping[str, Tool] | None = None) -> ToolRegistry:
    """Built-ins first (``provided``: those the process makes itself), then each configured
    module in order."""
    registry = ToolRegistry()
    registry.add_all(builtin_tools(config, provided), "builtin")
    for index, module_name in enumerate(config.modules):
        try:
            registry.load_module(module_name)
        except ImportError as exc:
            raise ToolDefinitionError(
                f"tools.modules[{index}]: cannot import {module_name!r}: {exc}"
            ) from exc
        except ToolDefinitionError as exc:
            raise ToolDefinitionError(f"tools.modules[{index}]: {exc}") from exc
    return registry
