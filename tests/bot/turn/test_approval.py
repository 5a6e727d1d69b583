"""What a Slack turn's approver keeps with a request and tells the model (pure): the
arguments in the tool's own order, what the card shows of the tool, the real duration of an
expired request."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from bot.turn.approval import duration, facts, ordered_arguments, refusal
from bot.turn.store.approvals import ApprovalRequest, ApprovalState
from tests.fakes import trading_tools
from tools.definition import Tool
from tools.hints import ToolHints


def test_arguments_keep_the_models_values_in_the_tools_parameter_order() -> None:
    schema = trading_tools.place_order.parameters
    assert list(schema["properties"]) == ["symbol", "quantity"]
    stored = ordered_arguments({"note": "x", "quantity": 3, "symbol": "ACME"}, schema)
    assert list(json.loads(stored).items()) == [("symbol", "ACME"), ("quantity", 3), ("note", "x")]
    assert ordered_arguments({"z": 1, "a": 2}, {}) == '{"z": 1, "a": 2}'  # no schema: as written


async def invoke(arguments: dict[str, Any]) -> Any:
    return arguments


def a_tool(**fields: Any) -> Tool:
    settings: dict[str, Any] = {"description": "", **fields}
    return Tool(name="wh_delete", parameters={}, invoke=invoke, **settings)


def test_the_card_is_told_the_tools_first_line_source_and_destructive_mark() -> None:
    said = facts(trading_tools.place_order)
    assert said.description == "Buy shares (needs a person's approval)."
    assert said.destructive  # a Python tool marked confirm=True
    assert not facts(trading_tools.get_price).destructive
    mcp = a_tool(
        description="Delete a pallet.\nMore words the card leaves out.",
        source="mcp warehouse",
        confirm=True,  # the server's approval mode asks; that alone is no destructive mark
    )
    assert (facts(mcp).description, facts(mcp).source, facts(mcp).destructive) == (
        "Delete a pallet.",
        "mcp warehouse",
        False,
    )
    marked = a_tool(source="mcp warehouse", hints=ToolHints(destructive=True))
    assert facts(marked).destructive
    assert len(facts(a_tool(description="w" * 500)).description) == 200


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (1, "1 second"),
        (5, "5 seconds"),
        (60, "1 minute"),
        (90, "1.5 minutes"),
        (900, "15 minutes"),
        (7200, "2 hours"),
        (3 * 86400, "3 days"),
    ],
)
def test_a_duration_reads_as_a_person_says_it(seconds: float, words: str) -> None:
    assert duration(seconds) == words


def test_the_model_is_told_how_long_nobody_decided() -> None:
    request = ApprovalRequest(
        "r1", "e1", "c1", "place_order", "{}", "T1", "C1", "1.0", "1.0", "U1", 100.0, 105.0
    )
    expired = replace(request, state=ApprovalState.EXPIRED)
    assert refusal(expired, 900) == (
        "place_order was not approved: nobody decided within 5 seconds. It did not run."
    )
    old = replace(expired, created=0.0, deadline=0.0)  # no times kept: the configured one
    assert "within 15 minutes" in refusal(old, 900)
