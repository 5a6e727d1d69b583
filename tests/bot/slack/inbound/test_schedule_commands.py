"""``/agent schedules``, ``pause``, ``resume``, ``unschedule`` and the Home tab's "Your
schedules" end to end: signed slash commands and events to the real app (fake Slack, real
Redis). The owner changes their schedule; someone else is refused; an admin acts on
anyone's; ``schedules all`` is an admin's; the Home tab lists one's own."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from bot.schedules.recurrence import Recurrence
from bot.state.audit import AuditKind
from bot.state.schedules import Schedule, TooMany
from tests.fakes.slack_harness import SlackHarness
from tests.fakes.slack_server import TEAM

ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["get_time"]},
}
CONFIG: dict[str, Any] = {"roles": ROLES}
DAILY = Recurrence(cron="0 9 * * *", at=None, timezone="Europe/Berlin")


async def made(slack_app: SlackHarness, owner: str, prompt: str) -> Schedule:
    upcoming = DAILY.next_after(datetime.now(UTC))
    assert upcoming is not None
    schedule = await slack_app.state.shared.schedules.create(
        team=TEAM,
        owner=owner,
        channel="C0OPS",
        prompt=prompt,
        recurrence=DAILY,
        next_at=upcoming.timestamp(),
        max_per_person=10,
        by=owner,
    )
    assert not isinstance(schedule, TooMany)
    return schedule


async def text(slack_app: SlackHarness, typed: str, user: str) -> str:
    reply = await slack_app.command(typed, user=user)
    assert reply["response_type"] == "ephemeral"
    return str(reply["text"])


async def test_the_owner_pauses_resumes_and_unschedules(slack_app: SlackHarness) -> None:
    await slack_app.start(with_worker=False, **CONFIG)
    mine = await made(slack_app, "U0ALICE", "Summarise yesterday's incidents")
    listed = await text(slack_app, "schedules", "U0ALICE")
    assert (
        f"• `{mine.id}` — “Summarise yesterday's incidents” in <#C0OPS> — at 09:00, every day "
        in listed
    )
    assert "(Europe/Berlin) — next <!date^" in listed

    paused = await text(slack_app, f"pause {mine.id}", "U0ALICE")
    assert paused.startswith(f"Paused schedule `{mine.id}`")
    assert "*paused* by <@U0ALICE>" in await text(slack_app, "schedules", "U0ALICE")
    before = time.time()
    resumed = await text(slack_app, f"resume {mine.id}", "U0ALICE")
    assert resumed.startswith(f"Resumed schedule `{mine.id}`: next <!date^")
    stored = await slack_app.state.shared.schedules.get(mine.id)
    assert stored is not None and stored.state == "active" and stored.next_at is not None
    assert before < stored.next_at <= before + 25 * 3600  # its next 09:00 in Berlin

    removed = await text(slack_app, f"unschedule {mine.id}", "U0ALICE")
    assert removed.startswith(f"Removed schedule `{mine.id}`")
    assert await slack_app.state.shared.schedules.of_owner(TEAM, "U0ALICE") == []
    audit = [
        (e.actor, e.action)
        for e in await slack_app.state.shared.audit.latest(20)
        if e.kind is AuditKind.SCHEDULE and e.target == mine.id
    ]
    assert audit == [
        ("U0ALICE", "removed"),
        ("U0ALICE", "resumed"),
        ("U0ALICE", "paused"),
        ("U0ALICE", "created"),
    ]


async def test_others_are_refused_and_an_admin_acts_on_anyones(slack_app: SlackHarness) -> None:
    await slack_app.start(with_worker=False, **CONFIG)
    alices = await made(slack_app, "U0ALICE", "Check the release")
    refused = await text(slack_app, f"pause {alices.id}", "U0BOB")
    assert refused == (
        f"Sorry, only <@U0ALICE>, who made schedule `{alices.id}`, or an admin can pause it."
    )
    assert await slack_app.state.shared.schedules.get(alices.id) == alices
    all_refused = await text(slack_app, "schedules all", "U0BOB")
    assert all_refused.startswith("Sorry, `/agent schedules all` is only for admins.")
    log = await text(slack_app, "audit 5", "U0ADMIN")
    assert f"<@U0BOB> admin `pause` `{alices.id}` → refused" in log
    assert "<@U0BOB> admin `schedules all` → refused" in log

    everyone = await text(slack_app, "schedules all", "U0ADMIN")
    assert everyone.startswith("*Everyone's schedules* (1 schedule):\n*<@U0ALICE>* (1):\n")
    assert (await text(slack_app, f"pause {alices.id}", "U0ADMIN")).startswith("Paused")
    assert "*paused* by <@U0ADMIN>" in await text(slack_app, "schedules", "U0ALICE")
    assert (await text(slack_app, f"resume {alices.id}", "U0ADMIN")).startswith("Resumed")
    assert (await text(slack_app, f"unschedule {alices.id}", "U0ADMIN")).startswith("Removed")
    assert await slack_app.state.shared.schedules.get(alices.id) is None


async def test_the_home_tab_lists_ones_own_schedules(slack_app: SlackHarness) -> None:
    await slack_app.start(with_worker=False, **CONFIG)
    mine = await made(slack_app, "U0ALICE", "Summarise <!channel> yesterday's incidents")
    await made(slack_app, "U0BOB", "Bob's weekly report")
    for user in ("U0ALICE", "U0CAROL"):
        opened = {"type": "app_home_opened", "user": user, "tab": "home", "event_ts": "1.1"}
        assert (await slack_app.post(slack_app.envelope(opened)))[0] == 200
    await slack_app.after_acks()
    views = {
        call.args["user_id"]: json.dumps(call.args["view"], ensure_ascii=False)
        for call in slack_app.slack.calls_to("views.publish")
    }
    alice = views["U0ALICE"]
    assert "Your schedules" in alice
    assert (
        f"• `{mine.id}` — “Summarise &lt;!channel&gt; yesterday's incidents” — at 09:00, every day "
        "(Europe/Berlin) — next <!date^"
    ) in alice
    assert "Bob's weekly report" not in alice
    assert "You have no schedules." in views["U0CAROL"]
