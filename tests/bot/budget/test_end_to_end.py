"""Spending limits in the running app, through signed requests as Slack sends them (the fake
Slack, the fake LLM, the real Redis): a person over a limit gets the plain answer and the
model is not called; `/agent usage` shows spend against each limit (one's own; admins
anyone's and the workspace's); the reset at the day's change with a clock the test moves;
MCP sampling counted against the person's limits too."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from tests.fakes.clock import MovableClock
from tests.fakes.llm_server import calls, text
from tests.fakes.slack_harness import SlackHarness, mention

ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["get_time"], "budget": {"daily_tokens": 1000}},
}
CONFIG: dict[str, Any] = {
    "roles": ROLES,
    "budgets": {"workspace": {"daily_tokens": 100_000}},
    "slack": {"streaming": False},
}
TOMORROW = datetime.now(UTC).date() + timedelta(days=1)
NEW_YORK = ZoneInfo("America/New_York")
REFUSED = (
    "Sorry, I can't answer this now: the daily limit of 1,000 tokens that the role *member* "
    "gives each person is reached (1,050 tokens used today)."
)


async def ask(app: SlackHarness, ts: str, user: str = "U0ALICE") -> str:
    await app.post(app.envelope(mention("hello", ts, user=user)))
    [answer] = await app.answered("C0CHAN", ts)
    return answer.shown


async def test_over_the_limit_the_plain_answer_and_no_model_call(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG)
    app.llm.add(text("first", usage=(900, 150)), text("for Bob", usage=(10, 5)))
    assert await ask(app, "600.000001") == "first"
    refused = await ask(app, "601.000001")
    assert refused.startswith(REFUSED) and "It resets at 00:00 UTC on " in refused
    assert len(app.llm.requests) == 1  # the model never saw the second turn
    # The role's limit is each person's: Bob, holding it too, is answered.
    assert await ask(app, "602.000001", user="U0BOB") == "for Bob"
    audit = (await app.command("audit 5", user="U0ADMIN"))["text"]
    assert "<@U0ALICE> budget `model call` `role member` → refused" in audit


async def test_agent_usage_shows_spend_against_each_limit(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG)
    app.llm.add(text("done", usage=(300, 100)))
    await ask(app, "610.000001")
    mine = (await app.command("usage", user="U0ALICE"))["text"].splitlines()
    assert mine[:3] == [
        "<@U0ALICE>",
        "• today: 1 turns, 300 + 100 tokens",
        "• last 7 days: 1 turns, 300 + 100 tokens",
    ]
    assert mine[3].startswith("*Spending limits today* (they reset at 00:00 UTC on ")
    assert mine[4:] == [
        "• 400 tokens used of the daily limit of 1,000 tokens that the role *member* gives "
        "each person",
        "• 400 tokens used of the workspace's daily limit of 100,000 tokens (for everyone "
        "together)",
    ]
    # Someone else's is for admins only (and the attempt is audited).
    other = (await app.command("usage <@U0ADMIN>", user="U0ALICE"))["text"]
    assert other.startswith("Sorry, only admins can see other people's usage.")
    assert (await app.command("usage <@U0ALICE>", user="U0ALICE"))["text"].splitlines() == mine
    # An admin sees anyone's, and the workspace's limits above everyone's usage.
    assert (await app.command("usage <@U0ALICE>", user="U0ADMIN"))["text"].splitlines() == mine
    everyone = (await app.command("usage", user="U0ADMIN"))["text"].splitlines()
    assert everyone[1] == mine[5]
    assert everyone[2:] == [
        "*Usage, today | last 7 days:*",
        "• <@U0ALICE> — 1 turns, 300 + 100 tokens | 1 turns, 300 + 100 tokens",
    ]
    audit = (await app.command("audit 3", user="U0ADMIN"))["text"]
    assert "<@U0ALICE> admin `usage` `<@U0ADMIN>` → refused" in audit


async def test_the_limit_resets_when_the_day_changes(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**{**CONFIG, "budgets": {"timezone": "America/New_York"}})
    assert app.services is not None
    # Five minutes before midnight in New York.
    clock = MovableClock(datetime.combine(TOMORROW, time(23, 55), tzinfo=NEW_YORK))
    app.services.budgets.clock = clock
    app.llm.add(text("before midnight", usage=(900, 150)), text("a new day", usage=(10, 5)))
    assert await ask(app, "620.000001") == "before midnight"
    refused = await ask(app, "621.000001")
    assert refused.startswith(REFUSED)
    next_day = TOMORROW + timedelta(days=1)
    assert refused.endswith(f"It resets at 00:00 America/New_York on {next_day}, in 5 min.")
    clock.move(timedelta(minutes=5))
    assert await ask(app, "622.000001") == "a new day"
    assert len(app.llm.requests) == 2


async def test_mcp_sampling_counts_against_the_persons_limits(slack_app: SlackHarness) -> None:
    server = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"]}
    app = await slack_app.start(
        roles={
            "member": {"default": True, "tools": ["wh_*"], "approval_exempt": ["wh_*"]},
            "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
        },
        budgets={"users": {"U0ALICE": {"daily_tokens": 30}}},
        slack={"streaming": False},
        mcp={"servers": {"warehouse": {**server, "prefix": "wh_", "sampling": True}}},
    )
    # The turn's first call spends 35 of Alice's 30: the server's sampling request is refused
    # before the model is asked, and so is the turn's next call.
    app.llm.add(calls(("wh_ask_model", {"question": "Colour?"}, "s1"), usage=(30, 5)))
    answer = await ask(app, "630.000001")
    assert answer.startswith(
        "Sorry, I can't answer this now: your daily limit of 30 tokens is reached "
        "(35 tokens used today)."
    )
    assert len(app.llm.requests) == 1
    audit = (await app.command("audit 5", user="U0ADMIN"))["text"]
    assert "<@U0ALICE> sampling `wh_ask_model` `mcp warehouse` → budget" in audit
    assert audit.count("<@U0ALICE> budget `model call` `user` → refused") == 2
