"""Which server owns a tool name when several offer it (pure)."""

from __future__ import annotations

from tools.mcp.names import Clash, assign, clash_message


def test_the_first_server_to_list_a_name_owns_it() -> None:
    owners, clashes = assign({}, {"a": ["x", "y"], "b": ["y", "z"]})
    assert owners == {"x": "a", "y": "a", "z": "b"}
    assert clashes == [Clash("y", "a", "b")]


def test_an_owner_keeps_its_names_until_it_stops_listing_them() -> None:
    owners, _ = assign({}, {"a": ["x"], "b": []})
    # b lists x later: a keeps it, b's is left out.
    owners, clashes = assign(owners, {"a": ["x"], "b": ["x"]})
    assert owners == {"x": "a"} and clashes == [Clash("x", "a", "b")]
    # Listed first by b in the mapping's order, still a's: claims are not order-dependent.
    owners, clashes = assign(owners, {"b": ["x"], "a": ["x"]})
    assert owners == {"x": "a"} and clashes == [Clash("x", "a", "b")]
    # a drops it: it goes to b.
    owners, clashes = assign(owners, {"a": [], "b": ["x"]})
    assert owners == {"x": "b"} and clashes == []


def test_the_start_up_error_names_both_servers_and_suggests_a_prefix() -> None:
    names = [f"tool_{n:02d}" for n in range(14)]
    _, clashes = assign({}, {"time": names, "clock": names})
    message = clash_message(clashes)
    assert message.startswith(
        "MCP servers time and clock both offer 14 tools named tool_00, tool_01, "
    )
    assert "tool_09 and 4 more; give one of them a prefix, e.g. " in message
    assert message.endswith('mcp.servers.clock.prefix: "clock_"')
    assert clash_message([Clash("get_time", "a", "b")]) == (
        "MCP servers a and b both offer a tool named get_time; give one of them a prefix, "
        'e.g. mcp.servers.b.prefix: "b_"'
    )
