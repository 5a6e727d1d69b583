"""Arguments the model writes that the bot cannot safely read (too deep, too large, not
JSON) never crash a turn: each is a tool error the model reads, and the turn answers once,
in its first attempt, with nothing interrupted and nothing huge kept or sent again."""

from __future__ import annotations

import json
import sys
from typing import Any

from bot.slack.blocks.approval_card import arguments_view
from bot.slack.blocks.arguments import ARGUMENTS_CHARS, shown_arguments
from bot.state.redis.thread_key import ThreadKey
from bot.turn.states import TurnState
from bot.turn.store.approvals import ApprovalRequest
from tests.fakes.llm_server import Request, calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import TEAM

STDIO = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"]}
CONFIG: dict[str, Any] = {
    "slack": {"streaming": False},
    "mcp": {"servers": {"warehouse": {**STDIO, "prefix": "wh_", "approval": "never"}}},
}


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"next": value}
    return value


BAD = {
    "deep": ("wh_lookup_stock", "[" * 100_000),
    "large": ("calculate", json.dumps({"expression": "1+" * 150_000 + "1"})),  # 300 KB
    "broken": ("wh_lookup_stock", '{"item": "flour", '),
    "nested": ("calculate", json.dumps({"expression": nested(100)})),
}


async def test_bad_arguments_are_tool_errors_and_the_turn_answers_once(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(**CONFIG)
    specs = [(name, arguments, call_id) for call_id, (name, arguments) in BAD.items()]
    specs.append(("wh_lookup_stock", json.dumps({"item": "flour"}), "good"))

    def answer(request: Request) -> Any:
        results = tool_results(request)
        kinds = {call_id: json.loads(results[call_id]).get("error") for call_id in BAD}
        return text(f"{json.dumps(kinds, sort_keys=True)} / {results['good']}")

    app.llm.add(calls(*specs, args_piece=8192), answer)
    await app.post(app.envelope(mention("do it all", "900.000001")))
    [answered] = await app.answered("C0CHAN", "900.000001")
    assert json.loads(answered.shown.split(" / ")[0]) == {
        "deep": "ArgumentsTooDeep",
        "large": "ArgumentsTooLarge",
        "broken": "InvalidJSON",
        "nested": "ArgumentsTooDeep",
    }
    assert answered.shown.endswith(" / flour: 12 bags")  # the good call ran beside them

    # The model read each refusal in words; nothing was interrupted, nothing sent twice.
    second = app.llm.requests[1]
    results = tool_results(second)
    assert "nested more than 64 levels deep" in json.loads(results["deep"])["message"]
    assert "larger than 256 KB" in json.loads(results["large"])["message"]
    assert "not valid JSON" in json.loads(results["broken"])["message"]
    assert "Interrupted" not in json.dumps(second)
    assert len(json.dumps(second)) < 20_000  # the 300 KB and the 100,000 brackets stay out
    assert len(app.llm.requests) == 2

    # One attempt, done; the audit names each refusal.
    state = app.state
    keys = [k async for k in state.client.scan_iter(match=f"{state.keys.prefix}turn:*")]
    [key] = [k for k in keys if k.count(":") == state.keys.prefix.count(":") + 1]
    record = await state.threads.records.read(key.rsplit(":", 1)[-1])
    assert record is not None
    assert (record.state, record.attempts) == (TurnState.DONE, 1)
    outcomes = sorted(e.outcome for e in await state.shared.audit.latest(10) if e.kind == "tool")
    assert outcomes == [
        "ArgumentsTooDeep",
        "ArgumentsTooDeep",
        "ArgumentsTooLarge",
        "InvalidJSON",
        "ok",
    ]
    # The thread's history keeps the refusals, not the arguments.
    thread = ThreadKey(TEAM, "C0CHAN", "900.000001")
    history = await state.client.lrange(state.keys.history(thread), 0, -1)
    assert 0 < sum(len(item) for item in history) < 20_000


def test_the_approval_card_shows_stored_arguments_it_cannot_read_as_text() -> None:
    """The loop refuses such arguments before anyone is asked; a request stored otherwise
    (an earlier version) is still shown, cut, rather than failing the card."""
    stored = "[" * 100_000
    shown = shown_arguments(stored, total_chars=ARGUMENTS_CHARS)
    assert shown.cut and shown.text.startswith("[[[") and len(shown.text) <= 1_550
    assert shown.text.endswith("(cut at 1,500 characters)")
    request = ApprovalRequest(
        "r1", "e1", "c1", "wh_lookup_stock", stored, TEAM, "C0CHAN", "1.0", "1.0", "U1", 0, 60
    )
    view = arguments_view(request)
    assert view["type"] == "modal" and len(json.dumps(view)) < 300_000
