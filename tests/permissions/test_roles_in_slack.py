"""Roles, tool permissions and the admin slash command, end to end: signed requests, the
fake Slack (users.info, user groups) and the fake LLM (which records the tools it was offered),
on the real Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.process.state import State
from bot.process.worker import slack_toolsets
from bot.turn.model import QueuedTurn, Turn
from tests.fakes import warehouse_tools
from tests.fakes.deadline import NoDeadline
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results
from tests.fakes.round_trips import counting_round_trips
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import TEAM, FakeSlack

ROLES = {
    "admin": {
        "admin": True,
        "members": ["U0ADMIN", "S0OPS"],
        "workspace_admins": True,
        "tools": ["*"],
    },
    "warehouse_staff": {
        "members": ["S0WAREHOUSE"],
        "tools": ["search_*", "get_inventory_stats", "!search_payroll"],
    },
    "member": {
        "default": True,
        "tools": ["get_time", "calculate"],
        "channels": ["D*", "C0GENERAL", "C0CHAN"],
    },
}
CONFIG: dict[str, Any] = {
    "roles": ROLES,
    "tools": {"modules": ["tests.fakes.warehouse_tools"]},
    "slack": {"streaming": False},
}


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    slack_app.slack.groups = {"S0OPS": ["U0OPS"], "S0WAREHOUSE": ["U0CLERK", "U0OPS"]}
    slack_app.slack.users = {
        "U0OWNER": {"id": "U0OWNER", "is_owner": True},
        "U0CLERK": {"id": "U0CLERK"},
        "U0ALICE": {"id": "U0ALICE"},
        "U0OPS": {"id": "U0OPS"},
        "U0ADMIN": {"id": "U0ADMIN"},
    }
    warehouse_tools.RUNS.clear()
    return await slack_app.start(**CONFIG)


async def whoami(app: SlackHarness, user: str) -> str:
    return str((await app.command("whoami", user=user))["text"])


@pytest.mark.cluster
async def test_each_source_of_roles(app: SlackHarness) -> None:
    assert "• *admin* — listed in the config" in await whoami(app, "U0ADMIN")
    ops = await whoami(app, "U0OPS")
    assert "• *admin* — member of user group S0OPS" in ops
    assert "• *warehouse_staff* — member of user group S0WAREHOUSE" in ops
    assert "• *admin* — Slack workspace admin or owner" in await whoami(app, "U0OWNER")
    assert "• *member* — default role" in await whoami(app, "U0ALICE")
    reply = await app.command("grant <@U0ALICE|alice> warehouse_staff", user="U0ADMIN")
    assert reply["text"] == "<@U0ALICE> now holds *warehouse_staff*."
    granted = await whoami(app, "U0ALICE")  # seen at once: the cached answer was dropped
    assert "• *warehouse_staff* — granted by <@U0ADMIN>" in granted
    assert "default role" not in granted
    await app.command("revoke <@U0ALICE> warehouse_staff", user="U0ADMIN")
    assert "• *member* — default role" in await whoami(app, "U0ALICE")


@pytest.mark.cluster
async def test_the_union_of_roles_and_deny_winning(app: SlackHarness) -> None:
    # U0OPS is an admin ("*") and warehouse staff ("!search_payroll"): the deny wins.
    tools = (await app.command("tools", user="U0OPS"))["text"]
    assert "`create_new_intent`" in tools and "`search_materials`" in tools
    assert "`search_payroll`" not in tools
    assert "`search_payroll`" in (await app.command("tools", user="U0ADMIN"))["text"]


@pytest.mark.cluster
async def test_the_default_role_when_slack_cannot_be_asked(app: SlackHarness) -> None:
    app.slack.fail("users.info", "internal_error", times=3)
    reply = await whoami(app, "U0OWNER")
    assert "• *member* — default role" in reply
    assert "admin" not in reply.split("Your tools")[0]


@pytest.mark.cluster
async def test_offered_tools_differ_by_role(app: SlackHarness) -> None:
    app.llm.add(text("a"), text("b"), text("c"))
    for user, ts in (
        ("U0ADMIN", "200.000001"),
        ("U0CLERK", "201.000001"),
        ("U0ALICE", "202.000001"),
    ):
        await app.post(app.envelope(mention("hello", ts, user=user)))
        await app.answered("C0CHAN", ts)
    assert app.llm.offered_tools(0) == [
        "get_time",
        "calculate",
        "schedule",
        "search_materials",
        "get_inventory_stats",
        "search_payroll",
        "create_new_intent",
    ]
    assert app.llm.offered_tools(1) == ["search_materials", "get_inventory_stats"]
    assert app.llm.offered_tools(2) == ["get_time", "calculate"]


@pytest.mark.cluster
async def test_channel_limits(app: SlackHarness) -> None:
    app.llm.add(text("a"), text("b"))
    await app.post(app.envelope(mention("hi", "203.000001", channel="C0RANDOM")))
    await app.answered("C0RANDOM", "203.000001")
    await app.post(app.envelope(mention("hi", "204.000001", channel="C0GENERAL")))
    await app.answered("C0GENERAL", "204.000001")
    assert app.llm.offered_tools(0) == []
    assert app.llm.offered_tools(1) == ["get_time", "calculate"]


@pytest.mark.cluster
async def test_a_forged_call_to_a_tool_not_allowed_is_refused_and_audited(
    app: SlackHarness,
) -> None:
    app.llm.add(
        calls(("create_new_intent", {"item": "flour", "quantity": 999}, "forged")),
        text("I could not do that."),
    )
    await app.post(app.envelope(mention("buy 999 flour", "205.000001", user="U0CLERK")))
    await app.answered("C0CHAN", "205.000001")
    refusal = json.loads(tool_results(app.llm.requests[1])["forged"])
    assert refusal["error"] == "ToolNotAllowed"
    assert "create_new_intent" not in warehouse_tools.RUNS
    audit = (await app.command("audit 5", user="U0ADMIN"))["text"]
    assert "<@U0CLERK> tool `create_new_intent` → ToolNotAllowed" in audit


@pytest.mark.cluster
async def test_an_admin_switch_is_seen_at_once_by_another_instance(
    slack_app: SlackHarness,
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    key_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_state: Callable[..., State],
) -> None:
    # Instance A takes commands only; instance B (same Redis) answers the turns.
    instance_a = await slack_app.start(with_worker=False, **CONFIG)
    instance_b = SlackHarness(
        fake_slack,
        fake_llm,
        slack_app.redis_url,
        key_prefix,
        tmp_path,
        monkeypatch,
        slack_app.redis_settings,
    )
    await instance_b.start(**CONFIG)
    try:
        fake_llm.add(text("before"), text("after"))
        await instance_b.post(instance_b.envelope(mention("time?", "206.000001", user="U0ADMIN")))
        await instance_b.answered("C0CHAN", "206.000001")
        assert "calculate" in fake_llm.offered_tools(0)

        reply = await instance_a.command("disable calculate", user="U0ADMIN")
        assert reply["text"] == "`calculate` is now off for everyone, from the next model call."
        await instance_b.post(instance_b.envelope(mention("sum?", "207.000001", user="U0ADMIN")))
        await instance_b.answered("C0CHAN", "207.000001")
        assert "calculate" not in fake_llm.offered_tools(1)
        everything = (await instance_a.command("tools all", user="U0ADMIN"))["text"]
        assert "• `calculate` [builtin] — *off* (by <@U0ADMIN>" in everything
        assert (await instance_a.command("enable calculate", user="U0ADMIN"))["text"].endswith(
            "now on for everyone, from the next model call."
        )
    finally:
        await instance_b.stop()


async def refusal_after_a_change(
    app: SlackHarness, user: str, ts: str, call: tuple[str, dict[str, str]], change: str
) -> dict[str, str]:
    """``user`` asks; the model is offered the tool of ``call`` and calls it, but its call
    arrives only once an admin has run ``change``: what the model is told of the call.
    The tool is not offered again in the round after."""
    tool, arguments = call
    answer = asyncio.Event()
    app.llm.add(calls((tool, arguments, "call"), hold=answer), text("Not this time."))
    await app.post(app.envelope(mention("please", ts, user=user)))
    await app.llm.wait_for_requests(1)
    assert tool in app.llm.offered_tools(0)
    await app.command(change, user="U0ADMIN")
    answer.set()
    await app.answered("C0CHAN", ts)
    assert tool not in app.llm.offered_tools(1)
    refusal: dict[str, str] = json.loads(tool_results(app.llm.requests[1])["call"])
    return refusal


@pytest.mark.cluster
async def test_a_tool_switched_off_after_it_was_offered_is_refused_at_the_call(
    app: SlackHarness,
) -> None:
    """Each policy question reads the switches afresh: the model was offered `calculate`,
    an admin turns it off before the model's call arrives, and the call is refused."""
    refusal = await refusal_after_a_change(
        app, "U0ADMIN", "208.000001", ("calculate", {"expression": "2+2"}), "disable calculate"
    )
    assert refusal["error"] == "ToolNotAllowed"
    assert "An admin has switched it off." in refusal["message"]


@pytest.mark.cluster
async def test_a_role_revoked_after_its_tool_was_offered_is_refused_at_the_call(
    app: SlackHarness,
) -> None:
    """Each policy question reads the person's roles afresh: a revoke between the model's
    offer and its call stops the call, though the roles were cached for the offer."""
    await app.command("grant <@U0ALICE> warehouse_staff", user="U0ADMIN")
    refusal = await refusal_after_a_change(
        app,
        "U0ALICE",
        "209.000001",
        ("search_materials", {"query": "flour"}),
        "revoke <@U0ALICE> warehouse_staff",
    )
    assert refusal["error"] == "ToolNotAllowed"
    assert "Your roles (member) do not allow it" in refusal["message"]
    assert "search_materials" not in warehouse_tools.RUNS


async def test_a_call_asks_redis_once_for_roles_and_switches(slack_app: SlackHarness) -> None:
    """The policy's question at a call is one round trip (the roles and the switches read
    together); the approval rule reads the roles again only for a tool that may need it."""
    app = await slack_app.start(with_worker=False, **CONFIG, approval={"tools": ["create_*"]})
    assert app.services is not None and app.process is not None
    toolset_for = slack_toolsets(app.services, app.process.slack)
    turn = Turn(TEAM, "C0CHAN", "210.000001", "U0ADMIN", "hi")
    await app.command("grant <@U0ADMIN> warehouse_staff", user="U0ADMIN")  # nothing cached
    tools = await toolset_for(QueuedTurn("entry", turn), NoDeadline(), None)
    await tools.list_tools()  # the answer looked up and cached: now a usual turn
    with counting_round_trips() as listing:
        offered = [t.name for t in await tools.list_tools()]
    with counting_round_trips() as call:
        await tools.get_tool("calculate")
    with counting_round_trips() as asked:
        await tools.get_tool("create_new_intent")  # may need approval: the roles again
    assert "calculate" in offered and "create_new_intent" in offered
    assert (listing.sent, call.sent, asked.sent) == (1, 1, 2)


@pytest.mark.cluster
async def test_a_non_admin_is_refused_politely(app: SlackHarness) -> None:
    reply = (await app.command("disable calculate", user="U0ALICE"))["text"]
    assert reply == (
        "Sorry, `/agent disable` is only for admins. `/agent help` shows what you can use."
    )
    assert "Admin:" not in (await app.command("help", user="U0ALICE"))["text"]
    assert "Admin:" in (await app.command("help", user="U0ADMIN"))["text"]
    audit = (await app.command("audit", user="U0ADMIN"))["text"]
    assert "<@U0ALICE> admin `disable` `calculate` → refused" in audit


@pytest.mark.cluster
async def test_an_owner_of_another_workspace_is_no_admin_here(app: SlackHarness) -> None:
    """Slack Connect: a shared channel's command carries the caller's own workspace; their
    admin status there gives nothing here."""
    app.slack.users["U0PARTNER"] = {"id": "U0PARTNER", "team_id": "T0OTHER", "is_owner": True}
    reply = await app.command("disable calculate", user="U0PARTNER", team="T0OTHER")
    assert reply["text"].startswith("Sorry, `/agent disable` is only for admins.")
    assert (
        "• *member* — default role"
        in (await app.command("whoami", user="U0PARTNER", team="T0OTHER"))["text"]
    )
    # A command that names this workspace changes nothing: users.info places them in theirs.
    assert "• *member* — default role" in await whoami(app, "U0PARTNER")


@pytest.mark.cluster
async def test_typos_get_suggestions(app: SlackHarness) -> None:
    assert (
        "Did you mean `/agent disable`?" in (await app.command("disabel x", user="U0ADMIN"))["text"]
    )
    assert (await app.command("disable calculat", user="U0ADMIN"))["text"] == (
        "There is no tool named `calculat`. Did you mean `calculate`?"
    )
    reply = (await app.command("grant <@U0ALICE> warehouse_staf", user="U0ADMIN"))["text"]
    assert "There is no role *warehouse_staf*. Did you mean *warehouse_staff*?" in reply
    assert (
        "Usage: `/agent grant <@user> <role>`"
        in (await app.command("grant", user="U0ADMIN"))["text"]
    )


@pytest.mark.cluster
async def test_admin_actions_are_audited_and_roles_listed(app: SlackHarness) -> None:
    await app.command("disable search_payroll", user="U0ADMIN")
    await app.command("grant <@U0ALICE> warehouse_staff", user="U0ADMIN")
    audit = (await app.command("audit 2", user="U0ADMIN"))["text"]
    lines = audit.splitlines()
    assert lines[0] == "*Latest 2:*"
    assert "<@U0ADMIN> admin `grant` `<@U0ALICE> warehouse_staff` → ok" in lines[1]
    assert "<@U0ADMIN> admin `disable` `search_payroll` → ok" in lines[2]
    roles = (await app.command("roles", user="U0ADMIN"))["text"]
    assert "• *admin* (admin): tools `*`; members <@U0ADMIN>, <!subteam^S0OPS> + workspace" in roles
    assert "• <@U0ALICE> — *warehouse_staff* (by <@U0ADMIN>" in roles


@pytest.mark.cluster
async def test_usage_after_a_turn(app: SlackHarness) -> None:
    app.llm.add(text("done", usage=(1000, 200)))
    await app.post(app.envelope(mention("hi", "208.000001", user="U0ALICE")))
    await app.answered("C0CHAN", "208.000001")
    mine = (await app.command("usage <@U0ALICE>", user="U0ADMIN"))["text"]
    assert mine.splitlines() == [
        "<@U0ALICE>",
        "• today: 1 turns, 1,000 + 200 tokens",
        "• last 7 days: 1 turns, 1,000 + 200 tokens",
    ]
    everyone = (await app.command("usage", user="U0ADMIN"))["text"]
    assert "• <@U0ALICE> — 1 turns" in everyone


@pytest.mark.cluster
async def test_the_home_tab_shows_roles_and_tools(app: SlackHarness) -> None:
    opened = {
        "type": "app_home_opened",
        "user": "U0CLERK",
        "channel": "D0CLERK",
        "tab": "home",
        "event_ts": "209.000001",
    }
    await app.post(app.envelope(opened))
    await app.after_acks()
    [publish] = app.slack.calls_to("views.publish")
    view = json.dumps(publish.args["view"])
    assert "*warehouse_staff* \\u2014 member of user group S0WAREHOUSE" in view
    assert "`search_materials`" in view and "`create_new_intent`" not in view


@pytest.mark.cluster
async def test_the_warehouse_example(app: SlackHarness) -> None:
    app.llm.add(
        calls(("search_materials", {"query": "flour"}, "s1")),
        lambda request: text(f"Found: {tool_results(request)['s1']}"),
        calls(("create_new_intent", {"item": "flour", "quantity": 10}, "i1")),
        lambda request: text(f"Done: {tool_results(request)['i1']}"),
    )
    # The clerk asks for flour: search_materials runs; create_new_intent is never offered.
    await app.post(app.envelope(mention("do we have flour?", "210.000001", user="U0CLERK")))
    [answer] = await app.answered("C0CHAN", "210.000001")
    assert "flour type 550" in answer.shown
    assert warehouse_tools.RUNS == ["search_materials"]
    assert all("create_new_intent" not in app.llm.offered_tools(i) for i in range(2))
    # The admin asks: create_new_intent is offered, and runs.
    await app.post(app.envelope(mention("order 10 flour", "211.000001", user="U0ADMIN")))
    [done] = await app.answered("C0CHAN", "211.000001")
    assert "create_new_intent" in app.llm.offered_tools(2)
    assert done.shown == "Done: intent created: 10 x flour"
    assert warehouse_tools.RUNS == ["search_materials", "create_new_intent"]


@pytest.mark.cluster
async def test_a_usual_turn_asks_slack_nothing_about_roles(app: SlackHarness) -> None:
    app.llm.add(text("one"), text("two"))
    await app.post(app.envelope(mention("first", "212.000001", user="U0OPS")))
    await app.answered("C0CHAN", "212.000001")
    lookups = len(app.slack.calls_to("users.info")) + len(
        app.slack.calls_to("usergroups.users.list")
    )
    assert lookups > 0  # the first turn resolved the roles...
    await app.post(app.envelope(mention("second", "213.000001", user="U0OPS")))
    await app.answered("C0CHAN", "213.000001")
    again = len(app.slack.calls_to("users.info")) + len(app.slack.calls_to("usergroups.users.list"))
    assert again == lookups  # ...the second used the cached answer
