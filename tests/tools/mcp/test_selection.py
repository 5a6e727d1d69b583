"""Which of a server's tools are taken: allow and deny patterns match the server's own name
and the name the model sees (pure)."""

from __future__ import annotations

from tools.mcp.selection import name_forms, taken


def test_every_form_of_a_name() -> None:
    assert name_forms("wh_", "delete.everything") == (
        "delete.everything",
        "delete_everything",
        "wh_delete_everything",
    )
    assert name_forms("", "lookup_stock") == ("lookup_stock",)


def test_a_deny_pattern_in_either_form_leaves_both_tools_out() -> None:
    for deny in (["delete_*"], ["delete.*"], ["wh_delete_*"], ["delete.everything"]):
        assert not taken(["*"], deny, "wh_", "delete.everything"), deny
    for deny in (["delete_*"], ["delete.*"], ["wh_delete_*"]):
        assert not taken(["*"], deny, "wh_", "delete_all"), deny
    # A deny made safe would reach the model under the same name: it stays out too.
    assert not taken(["*"], ["delete.everything"], "wh_", "delete_everything")
    assert taken(["*"], ["delete_*"], "wh_", "lookup.stock")


def test_an_allow_pattern_in_either_form_lets_a_tool_in_and_nothing_more() -> None:
    assert taken(["lookup_*"], [], "wh_", "lookup.stock")
    assert taken(["lookup.*"], [], "wh_", "lookup.stock")
    assert taken(["wh_lookup_*"], [], "wh_", "lookup.stock")
    # As written only: "lookup.stock" names the server's tool, not another one.
    assert not taken(["lookup.stock"], [], "wh_", "lookup_stock")
    assert not taken(["search_*"], [], "wh_", "lookup.stock")
