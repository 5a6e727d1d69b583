"""Which calls get an approval card in Slack, end to end (signed requests, the fake Slack and
the fake LLM, the real Redis): a call whose arguments do not fit its tool's schema gets none
(the model reads the tool error); each call the model makes is its own request, so running a
tool again takes a new card; an MCP tool that says `destructiveHint: false` still asks by
default (`approval: writes`), and runs unasked only on a server whose admin opted in
(`approval: destructive`)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.fakes import trading_tools
from tests.fakes.llm_server import calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, is_approval_card, mention
from tests.fakes.slack_server import Message
from tests.waiting import until, until_true

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

CONFIG: dict[str, Any] = {
    "roles": {"trader": {"default": True, "tools": ["*"]}},
    "tools": {"modules": ["tests.fakes.trading_tools"]},
    "slack": {"streaming": False},
}


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    trading_tools.RUNS.clear()
    slack_app.slack.users = {"U0ALICE": {"id": "U0ALICE"}}
    return await slack_app.start(**CONFIG)


def cards(app: SlackHarness, thread: str) -> list[Message]:
    return [m for m in app.slack.thread("C0CHAN", thread) if is_approval_card(m)]


def card_posts(app: SlackHarness) -> list[Any]:
    """Every Web API call that carried an approval card."""
    return [
        call
        for call in app.slack.calls
        if "approval" in json.dumps(call.args.get("metadata") or {})
    ]


async def approvals_of(app: SlackHarness, card: Message) -> dict[str, str]:
    """The card's open requests: the tool each one is for -> its request id."""
    ids = [
        element["value"]
        for block in card.blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
        if element.get("action_id") == "approval_approve"
    ]
    found = {}
    for request_id in ids:
        request = await app.state.threads.approvals.get(request_id)
        assert request is not None
        found[request.tool] = request_id
    return found


async def _is_some(found: Any) -> bool:
    return await found is not None


async def requests_made(app: SlackHarness) -> list[str]:
    state = app.state
    keys = [k async for k in state.client.scan_iter(match=f"{state.keys.prefix}*approval:*")]
    return [k.split("approval:", 1)[1] for k in keys]


async def test_a_call_with_invalid_arguments_gets_no_card_and_the_model_reads_the_error(
    app: SlackHarness,
) -> None:
    """place_order needs approval; its `quantity` must be a whole number. The model writes
    "lots": nobody is asked (no card, no request, no audit entry) and the model's next
    request carries the tool error; nothing ran."""
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": "lots"}, "o1")),
        text("I will ask for a number."),
    )
    await app.post(app.envelope(mention("buy lots of ACME", "720.000001")))
    [answer] = await app.answered("C0CHAN", "720.000001", within=20)
    assert answer.shown == "I will ask for a number."
    told = json.loads(tool_results(app.llm.requests[1])["o1"])
    assert told == {
        "error": "InvalidArguments",
        "message": "Invalid arguments for place_order: quantity: Input should be a valid "
        "integer, unable to parse string as an integer",
    }
    assert card_posts(app) == [] and not cards(app, "720.000001")
    assert await requests_made(app) == []
    assert not [e for e in await app.state.shared.audit.latest(20) if e.kind == "approval"]
    assert trading_tools.RUNS == []


async def test_each_call_is_its_own_request_so_a_second_run_takes_a_second_card(
    app: SlackHarness,
) -> None:
    """The model orders, is approved, and orders again in a later round: the second call
    opens a new request with its own card, and runs only once that is approved."""
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 1}, "o1")),
        calls(("place_order", {"symbol": "ACME", "quantity": 1}, "o2")),
        lambda request: text(f"Again: {tool_results(request)['o2']}."),
    )
    await app.post(app.envelope(mention("buy one ACME, twice", "721.000001")))
    await until(lambda: len(cards(app, "721.000001")) == 1)
    first = await approvals_of(app, cards(app, "721.000001")[0])
    assert (
        await app.click(
            "approval_approve", first["place_order"], "U0ALICE", cards(app, "721.000001")[0].ts
        )
        == 200
    )

    async def second_card() -> Message | None:
        for card in cards(app, "721.000001"):
            if (await approvals_of(app, card)).get("place_order") not in (None, first_request):
                return card
        return None

    first_request = first["place_order"]
    await until(lambda: trading_tools.RUNS == ["place_order ACME 1"])
    await until_true(lambda: _is_some(second_card()))
    card = await second_card()
    assert card is not None
    second = await approvals_of(app, card)
    assert second["place_order"] != first["place_order"]
    assert trading_tools.RUNS == ["place_order ACME 1"]  # the second waits for its own yes
    assert await app.click("approval_approve", second["place_order"], "U0ALICE", card.ts) == 200
    [answer] = await app.answered("C0CHAN", "721.000001", within=20)
    assert answer.shown == "Again: bought 1 ACME."
    assert trading_tools.RUNS == ["place_order ACME 1", "place_order ACME 1"]
    assert len(set(await requests_made(app))) == 2


STDIO = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"]}


async def test_an_mcp_tool_that_says_it_is_not_destructive_still_gets_a_card_by_default(
    slack_app: SlackHarness,
) -> None:
    """`make_directory` is annotated as the filesystem server's create_directory
    (`readOnlyHint: false, destructiveHint: false`): by default (`approval: writes`) it asks;
    the same tool on a server whose admin set `approval: destructive` runs unasked; a
    read-only tool runs unasked on both."""
    slack_app.slack.users = {"U0ALICE": {"id": "U0ALICE"}}
    app = await slack_app.start(
        **CONFIG,
        mcp={
            "servers": {
                "files": {**STDIO, "prefix": "fs_", "allow": ["make_directory", "count_pallets"]},
                "trusted": {
                    **STDIO,
                    "prefix": "tr_",
                    "allow": ["make_directory"],
                    "approval": "destructive",
                },
            }
        },
    )
    app.llm.add(
        calls(
            ("fs_make_directory", {"path": "/srv/a"}, "m1"),
            ("tr_make_directory", {"path": "/srv/b"}, "m2"),
            ("fs_count_pallets", {"aisle": 2}, "c1"),
        ),
        lambda request: text(json.dumps(tool_results(request), sort_keys=True)),
    )
    await app.post(app.envelope(mention("make the folders", "722.000001")))
    await until(lambda: bool(cards(app, "722.000001")))
    card = cards(app, "722.000001")[-1]
    waiting = await approvals_of(app, card)
    assert set(waiting) == {"fs_make_directory"}  # the card asks for it alone
    await app.click("approval_approve", waiting["fs_make_directory"], "U0ALICE", card.ts)
    [answer] = await app.answered("C0CHAN", "722.000001", within=30)
    assert json.loads(answer.shown) == {
        "c1": "aisle 2: 7 pallets",
        "m1": "made /srv/a",
        "m2": "made /srv/b",
    }
