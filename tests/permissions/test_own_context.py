"""Each person's context is their own, end to end: signed requests, the fake Slack, the fake
LLM (which records exactly what the model was given), the real Redis.

In a thread an admin and a member share, the member's turn is given the thread's questions
and answers but not the results of tools the member may not use; the admin's own follow-up
still sees them. A thread the bot joins anew (its history gone) gives the model only the text
people can read, never the task cards' output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.state.redis.thread_key import ThreadKey
from permissions.withholding import arguments_note, carried_note, note
from tests.fakes import warehouse_tools
from tests.fakes.llm_server import Request, calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import BOT_USER, TEAM

ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["get_time", "search_materials"], "channels": ["C0*"]},
}
CONFIG: dict[str, Any] = {
    "roles": ROLES,
    "tools": {"modules": ["tests.fakes.warehouse_tools"]},
}
WITHHELD = note("search_payroll")


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    slack_app.slack.users = {"U0ADMIN": {"id": "U0ADMIN"}, "U0ALICE": {"id": "U0ALICE"}}
    warehouse_tools.RUNS.clear()
    return await slack_app.start(**CONFIG)


def said(request: Request) -> list[Any]:
    """What the model was given of people's questions and its own answers."""
    return [m.get("content") for m in request["messages"] if m["role"] in ("user", "assistant")]


async def test_a_shared_thread_withholds_the_admins_restricted_result_from_a_member(
    app: SlackHarness,
) -> None:
    root = "400.000001"
    app.llm.add(
        calls(
            ("search_payroll", {"name": "Bob"}, "p1"), ("search_materials", {"query": "oak"}, "m1")
        ),
        # A later round: the model read the restricted result and may put it in arguments.
        lambda request: calls(
            ("search_materials", {"query": f"{tool_results(request)['p1']} x"}, "m2")
        ),
        text("Bob's pay is on file."),
        text("I cannot see that result."),
        lambda request: text(f"It said: {tool_results(request)['p1']}"),
    )
    # The admin runs the restricted tool (and one the member may use) in a channel thread.
    await app.post(app.envelope(mention("what does Bob earn?", root, user="U0ADMIN")))
    await app.answered("C0CHAN", root)
    assert sorted(warehouse_tools.RUNS) == ["search_materials"] * 2 + ["search_payroll"]
    admins_turn = app.llm.requests[2]
    assert tool_results(admins_turn)["p1"] == "confidential"
    assert "confidential x" in tool_results(admins_turn)["m2"]

    # A member asks in the same thread.
    ask = mention("what did the payroll search say?", "400.000002", user="U0ALICE", thread_ts=root)
    await app.post(app.envelope(ask))
    await app.answered("C0CHAN", root, count=2)
    members_turn = app.llm.requests[3]
    # The restricted call's result, and every result that could carry it: the other call of
    # its round and the later round's, though she may use search_materials.
    assert tool_results(members_turn) == {
        "p1": WITHHELD,
        "m1": carried_note("search_materials"),
        "m2": carried_note("search_materials"),
    }
    # The arguments too: the restricted call's, and every later one's.
    arguments = {
        c["id"]: c["function"]["arguments"]
        for m in members_turn["messages"]
        for c in m.get("tool_calls") or ()
    }
    assert arguments == {
        "p1": arguments_note("search_payroll", restricted=True),
        "m1": arguments_note("search_materials", restricted=False),
        "m2": arguments_note("search_materials", restricted=False),
    }
    assert "confidential" not in json.dumps(members_turn["messages"])
    assert "oak" not in json.dumps(members_turn["messages"])
    # The thread's questions and answers stay, the admin's calls included (Slack showed
    # their names).
    assert said(members_turn)[-5:-1] == [
        "<@U0ADMIN>: what does Bob earn?",
        None,
        None,
        "Bob's pay is on file.",
    ]
    assert members_turn["messages"][2]["tool_calls"][0]["function"]["name"] == "search_payroll"

    # The admin's own follow-up still sees the results and arguments.
    follow_up = mention(
        "and what exactly did it say?", "400.000003", user="U0ADMIN", thread_ts=root
    )
    await app.post(app.envelope(follow_up))
    [*_, answer] = await app.answered("C0CHAN", root, count=3)
    assert answer.shown == "It said: confidential"
    admins_follow_up = app.llm.requests[4]
    assert tool_results(admins_follow_up)["p1"] == "confidential"
    [payroll, _] = admins_follow_up["messages"][2]["tool_calls"]
    assert json.loads(payroll["function"]["arguments"]) == {"name": "Bob"}
    assert len(app.llm.requests) == 5

    # Each turn is stored with who asked it.
    assert app.services is not None
    stored = await app.services.state.threads.history.stored_turns(ThreadKey(TEAM, "C0CHAN", root))
    assert [turn.user for turn in stored] == ["U0ADMIN", "U0ALICE", "U0ADMIN"]


async def test_a_thread_joined_anew_shows_no_task_card_output(app: SlackHarness) -> None:
    """The read of a thread the bot joins takes each message's text (and its files' and
    forwards' descriptions), never blocks: a task card's output never reaches the model."""
    assert app.services is not None
    state = app.services.state
    root = app.slack.new_ts()
    asked = f"<@{BOT_USER}> what does Bob earn?"
    app.slack.add_user_message("C0CHAN", root, "U0ADMIN", asked)
    app.llm.add(
        calls(("search_payroll", {"name": "Bob"}, "p1")),
        text("Bob's pay is on file."),
        text("The bot looked it up."),
    )
    await app.post(app.envelope(mention("what does Bob earn?", root, user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", root)
    # The thread shows the call's card; in a channel, without its output.
    [card] = answer.tasks.values()
    assert card["status"] == "complete" and "output" not in card
    # Were it there (however Slack lists a card, in the message's blocks too), the read of
    # the thread would not take it.
    answer.blocks.append({"type": "task_card", **card, "output": "confidential"})

    # A week later the thread's history and the bot's place in it have expired.
    thread = ThreadKey(TEAM, "C0CHAN", root)
    await state.client.delete(
        state.keys.history(thread),
        state.keys.history_bytes(thread),
        state.keys.participation(thread),
    )
    ts = app.slack.new_ts()
    app.slack.add_user_message("C0CHAN", ts, "U0ALICE", f"<@{BOT_USER}> what happened?", root)
    await app.post(app.envelope(mention("what happened?", ts, user="U0ALICE", thread_ts=root)))
    await app.answered("C0CHAN", root, count=2)
    assert len(app.slack.calls_to("conversations.replies")) == 1  # the thread was read
    joined = app.llm.requests[2]
    given = str(joined["messages"][-1]["content"])
    assert "Earlier messages in this thread" in given
    assert "Bob's pay is on file." in given  # the answer people read stays
    assert "confidential" not in json.dumps(joined["messages"])
