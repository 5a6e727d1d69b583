"""The registry: built-ins, tools from user modules, and duplicate names."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import ToolDefinitionError, ToolRegistry, ToolUnavailable, build_registry, tool
from tools.config import FetchUrlConfig, ToolsConfig


@pytest.fixture
def module_dir(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("acme_")]:
            del sys.modules[name]


def write_module(directory: Path, name: str, body: str) -> None:
    (directory / f"{name}.py").write_text(textwrap.dedent(body))


async def test_builtins_and_a_user_module(module_dir: Path) -> None:
    write_module(
        module_dir,
        "acme_tools",
        '''
        from tools import tool

        from tools.builtin.calculator import calculate  # imported, not defined here

        @tool
        def search_materials(query: str) -> list[str]:
            """Search materials."""
            return [query]

        def not_a_tool() -> None:
            pass
        ''',
    )
    registry = build_registry(ToolsConfig(modules=["acme_tools"]))
    assert registry.names() == ["get_time", "calculate", "search_materials"]
    found = await registry.get_tool("search_materials")
    assert found.source == "module acme_tools"
    assert (await registry.get_tool("calculate")).source == "builtin"
    assert [t.name for t in await registry.list_tools()] == registry.names()
    with pytest.raises(ToolUnavailable) as caught:
        await registry.get_tool("missing")
    assert caught.value.kind == "UnknownTool"


def test_fetch_url_is_off_unless_hosts_are_configured() -> None:
    assert "fetch_url" not in build_registry(ToolsConfig())
    with_hosts = ToolsConfig(fetch_url=FetchUrlConfig(allowed_hosts=["example.com"]))
    assert "fetch_url" in build_registry(with_hosts)
    only_calc = ToolsConfig(builtins=["calculate"])
    assert build_registry(only_calc).names() == ["calculate"]


def test_two_tools_with_one_name_name_both_sources(module_dir: Path) -> None:
    write_module(
        module_dir,
        "acme_clock",
        '''
        from tools import tool

        @tool
        def get_time() -> str:
            """Our own clock."""
            return "now"
        ''',
    )
    with pytest.raises(ToolDefinitionError) as caught:
        build_registry(ToolsConfig(modules=["acme_clock"]))
    message = str(caught.value)
    assert message.startswith("tools.modules[0]: ")
    assert "two tools are named 'get_time'" in message
    assert "builtin" in message and "module acme_clock" in message


def test_duplicates_between_modules(module_dir: Path) -> None:
    body = '''
        from tools import tool

        @tool
        def lookup(x: str) -> str:
            """Lookup."""
            return x
        '''
    write_module(module_dir, "acme_a", body)
    write_module(module_dir, "acme_b", body)
    with pytest.raises(
        ToolDefinitionError, match=r"tools\.modules\[1\].*module acme_a.*module acme_b"
    ):
        build_registry(ToolsConfig(modules=["acme_a", "acme_b"]))


def test_module_problems_are_clear(module_dir: Path) -> None:
    with pytest.raises(
        ToolDefinitionError, match=r"tools\.modules\[0\]: cannot import 'acme_nope'"
    ):
        build_registry(ToolsConfig(modules=["acme_nope"]))
    write_module(module_dir, "acme_empty", "X = 1\n")
    with pytest.raises(ToolDefinitionError, match="defines no @tool functions"):
        build_registry(ToolsConfig(modules=["acme_empty"]))


def test_add_directly() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    registry = ToolRegistry()
    registry.add(ping, "tests")
    assert "ping" in registry and len(registry) == 1
    assert registry.get("ping") is not None
    with pytest.raises(ToolDefinitionError, match="one from tests, one from elsewhere"):
        registry.add(ping, "elsewhere")
