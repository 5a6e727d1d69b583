"""Shared channels fail closed, end to end: signed requests, the fake Slack (whose users.info
says which workspace each person is of) and the fake LLM (which records the tools it was
offered), on the real Redis.

A person counts as of this workspace only when the event, click or command names the bot's
workspace as theirs and users.info places them there too (the bot's auth.test workspace, or
its Enterprise Grid organisation). A surface that names no workspace, or another, makes them
an outside person, and so does users.info placing them elsewhere or nowhere: config user IDs
and grants only, never this workspace's admin status or user groups, for their turns,
`/agent`, the Stop button and approval clicks alike.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.bot.slack.outbound.test_approvals import a_card, buttons, ephemerals
from tests.bot.slack.outbound.test_stop import running_progress, stop_button
from tests.fakes import slow_tools, trading_tools, warehouse_tools
from tests.fakes.llm_server import calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import TEAM

MEMBER_TOOLS = ["get_time", "calculate", "wait_a_while", "get_price", "place_order"]
CONFIG: dict[str, Any] = {
    "roles": {
        "admin": {
            "admin": True,
            "members": ["S0OPS"],
            "workspace_admins": True,
            "tools": ["*"],
        },
        "member": {"default": True, "tools": MEMBER_TOOLS},
    },
    "tools": {
        "modules": [
            "tests.fakes.warehouse_tools",
            "tests.fakes.slow_tools",
            "tests.fakes.trading_tools",
        ]
    },
    "slack": {"streaming": False, "edit_interval_s": 0.2},
}
REFUSED = "Sorry, `/agent disable` is only for admins. `/agent help` shows what you can use."
STOP_REFUSED = "Only the person who asked, or an admin, can stop this answer."


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    slack_app.slack.users = {
        # An owner of another workspace, in this one's ops group: neither counts here.
        "U0PARTNER": {"id": "U0PARTNER", "team_id": "T0OTHER", "is_owner": True},
        # users.info names no workspace for them: they cannot be placed here.
        "U0STRAY": {"id": "U0STRAY", "team_id": None, "is_admin": True},
        "U0OWNER": {"id": "U0OWNER", "team_id": TEAM, "is_owner": True},
        "U0ALICE": {"id": "U0ALICE"},
    }
    slack_app.slack.groups = {"S0OPS": ["U0PARTNER", "U0STRAY"]}
    slack_app.slack.agent_sessions = False  # the Stop button is ours
    for runs in (warehouse_tools.RUNS, trading_tools.RUNS):
        runs.clear()
    return await slack_app.start(**CONFIG)


def unnamed(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` as Slack may send it in a shared channel: no user_team, team, source_team."""
    return {k: v for k, v in event.items() if k not in ("user_team", "team", "source_team")}


def offered(app: SlackHarness, index: int) -> set[str]:
    return set(app.llm.offered_tools(index))


async def test_a_message_naming_no_workspace_is_an_outside_persons(app: SlackHarness) -> None:
    app.llm.add(*(text(f"answer {n}") for n in range(6)))
    for n, (user, named) in enumerate(
        (
            ("U0PARTNER", False),
            ("U0STRAY", False),
            ("U0OWNER", False),  # users.info places them here, but the event does not
            ("U0OWNER", True),
            ("U0PARTNER", True),  # the event names this workspace; users.info another
            ("U0STRAY", True),  # users.info names no workspace for them
        )
    ):
        ts = f"80{n}.000001"
        event = mention("hello", ts, user=user)
        await app.post(app.envelope(event if named else unnamed(event)))
        await app.answered("C0CHAN", ts)
    for n in (0, 1, 2, 4, 5):
        assert offered(app, n) == set(MEMBER_TOOLS), n
    # Only an owner of this workspace whom the event names as such holds the admin role.
    assert "create_new_intent" in offered(app, 3)


async def test_their_admin_commands_are_refused_whichever_workspace_the_command_names(
    app: SlackHarness,
) -> None:
    for user, team in (("U0PARTNER", ""), ("U0PARTNER", TEAM), ("U0OWNER", "")):
        reply = await app.command("disable calculate", user=user, team=team)
        assert reply["text"] == REFUSED, (user, team)
        whoami = (await app.command("whoami", user=user, team=team))["text"]
        assert "• *member* — default role" in whoami and "S0OPS" not in whoami
    mine = (await app.command("whoami", user="U0OWNER", team=TEAM))["text"]
    assert "• *admin* — Slack workspace admin or owner" in mine
    done = await app.command("disable calculate", user="U0OWNER", team=TEAM)
    assert done["text"] == "`calculate` is now off for everyone, from the next model call."


async def test_the_home_tab_of_an_owner_elsewhere_shows_the_default_role(
    app: SlackHarness,
) -> None:
    for user in ("U0PARTNER", "U0OWNER"):
        opened = {"type": "app_home_opened", "user": user, "tab": "home", "event_ts": "1.1"}
        await app.post(app.envelope(opened))
    await app.after_acks()
    views = {
        c.args["user_id"]: json.dumps(c.args["view"]) for c in app.slack.calls_to("views.publish")
    }
    assert "default role" in views["U0PARTNER"] and "create_new_intent" not in views["U0PARTNER"]
    assert "workspace admin or owner" in views["U0OWNER"]


async def test_their_stop_click_naming_no_workspace_is_refused(app: SlackHarness) -> None:
    app.llm.add(calls(("wait_a_while", {"seconds": 1.5}, "w1")), text("Done waiting."))
    await app.post(app.envelope(mention("wait", "810.000001", user="U0ALICE")))
    progress = await running_progress(app, "810.000001")
    button = stop_button(progress)
    assert button is not None
    # A click naming this workspace, from someone users.info places in T0OTHER; then an
    # owner of this workspace whose click names no workspace.
    assert await app.click("stop_turn", button["value"], "U0PARTNER", progress.ts) == 200
    assert await app.click("stop_turn", button["value"], "U0OWNER", progress.ts, team=None) == 200
    await app.after_acks()
    assert ephemerals(app) == [STOP_REFUSED, STOP_REFUSED]
    answers = await app.answered("C0CHAN", "810.000001", within=10)
    assert [a.shown for a in answers] == ["Done waiting."]
    # The owner's click naming this workspace stops a turn.
    slow_tools.CANCELLED.clear()
    app.llm.add(calls(("wait_a_while", {"seconds": 30}, "w2")), text("never"))
    await app.post(app.envelope(mention("wait long", "811.000001", user="U0ALICE")))
    progress = await running_progress(app, "811.000001")
    button = stop_button(progress)
    assert button is not None
    await app.click("stop_turn", button["value"], "U0OWNER", progress.ts)
    answers = await app.answered("C0CHAN", "811.000001", within=10)
    assert [a.shown for a in answers] == ["Stopped before the answer was finished."]
    assert slow_tools.CANCELLED == [30]


async def test_their_approval_click_naming_no_workspace_is_refused(app: SlackHarness) -> None:
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 3}, "o1")),
        lambda request: text(f"Done: {tool_results(request)['o1']}."),
    )
    await app.post(app.envelope(mention("buy 3 ACME", "820.000001", user="U0ALICE")))
    card = await a_card(app, "820.000001")
    approve = buttons(card)["Approve place_order"]
    await app.click("approval_approve", approve, "U0PARTNER", card.ts)  # placed in T0OTHER
    await app.click("approval_approve", approve, "U0OWNER", card.ts, team=None)
    await app.after_acks()
    assert len([said for said in ephemerals(app) if "only <@U0ALICE>" in said]) == 2
    request = await app.state.threads.approvals.get(approve)
    assert request is not None and request.open and trading_tools.RUNS == []
    # An owner of this workspace, the click naming it, may decide: an admin by users.info.
    await app.click("approval_approve", approve, "U0OWNER", card.ts)
    [answer] = await app.answered("C0CHAN", "820.000001", within=20)
    assert answer.shown == "Done: bought 3 ACME." and trading_tools.RUNS == ["place_order ACME 3"]


async def test_on_enterprise_grid_the_organisation_is_the_bots(slack_app: SlackHarness) -> None:
    """auth.test names the bot's Grid organisation: its people count as of this workspace,
    its admins as admins; a sibling workspace's admin is none here, another org's owner is an
    outside person."""
    slack_app.slack.enterprise = "E0ORG"
    slack_app.slack.users = {
        "U0ORGADMIN": {
            "id": "U0ORGADMIN",
            "team_id": "T0SIBLING",
            "enterprise_user": {"enterprise_id": "E0ORG", "is_admin": True},
        },
        "U0SIBLING": {
            "id": "U0SIBLING",
            "team_id": "T0SIBLING",
            "is_admin": True,  # of their own workspace
            "enterprise_user": {"enterprise_id": "E0ORG"},
        },
        "U0ELSE": {
            "id": "U0ELSE",
            "team_id": "T0ELSE",
            "enterprise_user": {"enterprise_id": "E0ELSE", "is_owner": True},
        },
    }
    slack_app.slack.groups = {"S0OPS": ["U0SIBLING", "U0ELSE"]}
    app = await slack_app.start(**CONFIG)

    async def whoami(user: str) -> str:
        return str((await app.command("whoami", user=user, team=TEAM))["text"])

    assert "• *admin* — Slack workspace admin or owner" in await whoami("U0ORGADMIN")
    sibling = await whoami("U0SIBLING")
    assert "• *admin* — member of user group S0OPS" in sibling
    assert "workspace admin" not in sibling
    assert "• *member* — default role" in await whoami("U0ELSE")
