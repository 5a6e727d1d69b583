"""Filtered toolsets answer the same way when listing and when running."""

from __future__ import annotations

import pytest

from tools import FilteredToolset, StaticToolset, Tool, ToolUnavailable, tool


@tool
def public() -> str:
    """Public."""
    return "p"


@tool
def secret() -> str:
    """Secret."""
    return "s"


async def test_filter_applies_to_listing_and_to_lookup() -> None:
    switched_off = {"secret"}

    async def allow(t: Tool) -> bool:
        return t.name not in switched_off

    toolset = FilteredToolset(StaticToolset([public, secret]), allow, "It is switched off.")
    assert [t.name for t in await toolset.list_tools()] == ["public"]
    assert (await toolset.get_tool("public")) is public
    with pytest.raises(ToolUnavailable) as caught:
        await toolset.get_tool("secret")
    assert caught.value.kind == "ToolNotAllowed"
    assert str(caught.value) == "The tool 'secret' is not available here. It is switched off."
    # Asked again at execution time: switching it back on takes effect at once.
    switched_off.clear()
    assert (await toolset.get_tool("secret")) is secret
    with pytest.raises(ToolUnavailable) as unknown:
        await toolset.get_tool("ghost")
    assert unknown.value.kind == "UnknownTool"


async def test_sync_predicates_work_too() -> None:
    toolset = FilteredToolset(StaticToolset([public, secret]), lambda t: t.name == "secret")
    assert [t.name for t in await toolset.list_tools()] == ["secret"]
