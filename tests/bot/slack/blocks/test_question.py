"""The question message's blocks, and reading a click's form values (pure)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from bot.slack.blocks.question import question_blocks, submitted_values
from bot.slack.outbound.asker import SlackAsker
from tools.questions import Answer, Question

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "note": {"type": "string", "maxLength": 500},
        "count": {"type": "integer", "minimum": 1, "default": 2},
        "weight": {"type": "number"},
        "urgent": {"type": "boolean", "default": True},
        "size": {"type": "string", "enum": ["small", "large"], "default": "large"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["new", "old"]}},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "due": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
    },
    "required": ["count"],
}


def elements(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b["element"] for b in blocks if b["type"] == "input"}


def test_a_form_has_an_input_per_field_and_submit_or_decline() -> None:
    blocks = question_blocks("q1", "the MCP server wh", "Details?", SCHEMA, None, "U1", 300)
    assert blocks[0]["text"]["text"] == ":question: The MCP server wh asks: Details?"
    assert blocks[1]["elements"][0]["text"] == "For <@U1> · declined after 5 min"
    inputs = elements(blocks)
    assert inputs["elicit:note"] == {
        "type": "plain_text_input",
        "multiline": True,
        "action_id": "value",
    }
    assert inputs["elicit:count"] == {
        "type": "number_input",
        "is_decimal_allowed": False,
        "min_value": "1",
        "initial_value": "2",
        "action_id": "value",
    }
    assert inputs["elicit:weight"]["is_decimal_allowed"] is True
    assert inputs["elicit:urgent"]["type"] == "radio_buttons"
    assert inputs["elicit:urgent"]["initial_option"]["value"] == "true"
    assert inputs["elicit:size"]["type"] == "static_select"
    assert inputs["elicit:size"]["initial_option"]["value"] == "large"
    assert inputs["elicit:tags"]["type"] == "multi_static_select"
    assert inputs["elicit:email"]["type"] == "email_text_input"
    assert inputs["elicit:site"]["type"] == "url_text_input"
    assert inputs["elicit:due"]["type"] == "datepicker"
    assert inputs["elicit:at"]["type"] == "datetimepicker"
    optional = {b["block_id"]: b["optional"] for b in blocks if b["type"] == "input"}
    assert optional["elicit:count"] is False and optional["elicit:note"] is True
    actions = blocks[-1]["elements"]
    assert [(a["action_id"], a["value"]) for a in actions] == [
        ("elicit_submit", "q1"),
        ("elicit_decline", "q1"),
    ]


def test_yes_no_and_url_questions_are_buttons() -> None:
    plain = question_blocks("q2", "the MCP server wh", "Go on?", {}, None, "U1", 60)
    assert [a["action_id"] for a in plain[-1]["elements"]] == ["elicit_accept", "elicit_decline"]
    assert plain[1]["elements"][0]["text"].endswith("declined after 60 s")
    url = question_blocks("q3", "the MCP server wh", "Sign in", {}, "https://x.example/a", "U1", 60)
    opened = url[-1]["elements"][0]
    assert opened["action_id"] == "elicit_accept" and opened["url"] == "https://x.example/a"


def test_submitted_values_are_typed_by_the_schema() -> None:
    def value(**element: Any) -> dict[str, Any]:
        return {"value": element}

    state = {
        "values": {
            "elicit:note": value(type="plain_text_input", value="hi"),
            "elicit:count": value(type="number_input", value="3"),
            "elicit:weight": value(type="number_input", value="2.5"),
            "elicit:urgent": value(type="radio_buttons", selected_option={"value": "false"}),
            "elicit:size": value(type="static_select", selected_option={"value": "small"}),
            "elicit:tags": value(
                type="multi_static_select", selected_options=[{"value": "new"}, {"value": "old"}]
            ),
            "elicit:email": value(type="email_text_input", value=None),
            "elicit:due": value(type="datepicker", selected_date="2026-12-24"),
            "elicit:at": value(type="datetimepicker", selected_date_time=1_800_000_000),
        }
    }
    assert submitted_values(SCHEMA, state) == {
        "note": "hi",
        "count": 3,
        "weight": 2.5,
        "urgent": False,
        "size": "small",
        "tags": ["new", "old"],
        "due": "2026-12-24",
        "at": "2027-01-15T08:00:00+00:00",
    }


def test_a_servers_words_cannot_mention_anyone() -> None:
    blocks = question_blocks(
        "q4", "the MCP server wh", "Hey <!channel> & <@U2>", {}, None, "U1", 60
    )
    assert blocks[0]["text"]["text"] == (
        ":question: The MCP server wh asks: Hey &lt;!channel&gt; &amp; &lt;@U2&gt;"
    )


def test_only_an_https_page_is_a_link_with_its_host_in_plain_text() -> None:
    page = "https://accounts.example.com/login"
    blocks = question_blocks("q4", "the MCP server wh", "Sign in", {}, page, "U1", 60)
    assert blocks[0]["text"]["verbatim"] is True  # an address in the words is no link
    assert blocks[-2] == {
        "type": "context",
        "elements": [
            {"type": "plain_text", "text": "The page is on accounts.example.com", "emoji": False}
        ],
    }
    assert [b.get("url") for b in blocks[-1]["elements"]] == [page, None]
    for address in ("http://accounts.example.com/login", "javascript:alert(1)"):
        blocks = question_blocks("q5", "the MCP server wh", "Sign in", {}, address, "U1", 60)
        assert address not in json.dumps(blocks)
        assert [b["action_id"] for b in blocks[-1]["elements"]] == ["elicit_decline"]
        assert blocks[-2]["elements"][0]["text"] == "The page is not an https address."


async def test_the_asker_declines_a_page_that_is_not_https_without_posting() -> None:
    """Nothing of Slack or Redis is touched: the question is never shown."""
    turn = SimpleNamespace(channel="C0CHAN")
    asker = SlackAsker(None, None, turn)  # type: ignore[arg-type]
    question = Question("the MCP server wh", "Sign in", {}, url="http://x.example/a")
    assert await asker.ask(question) == Answer("decline")
