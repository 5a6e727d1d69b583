"""Schedules end to end through the real app (signed requests, the fake Slack and the fake
model, the real Redis, the worker and the scheduler it runs): the model calls ``schedule``,
bad input is refused with no card, the card shows the recurrence in words and the next runs
as Slack dates, a click approves it; the scheduler fires the run: one headline at the top of
the conversation, the answer in its thread, the run's outcome on the schedule. A run is its
owner's as they are at that moment: one who left the workspace pauses the schedule, a role
lost between two runs takes its tools from the second, an approval card in a run mentions
them."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.schedules.firing import OWNER_GONE, owner_left
from bot.schedules.recurrence import Recurrence
from bot.state.schedules import Schedule
from tests.fakes import trading_tools
from tests.fakes.llm_server import Reply, Request, calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, direct_message, is_progress, mention
from tests.fakes.slack_server import TEAM, Message
from tests.waiting import until, until_true

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

PROMPT = "Summarise yesterday's incidents in two lines."
ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["get_time", "schedule", "place_order"]},
    "analyst": {"tools": ["calculate"]},
}
CONFIG: dict[str, Any] = {
    "roles": ROLES,
    "tools": {"modules": ["tests.fakes.trading_tools"]},
    "slack": {"streaming": False},
    "schedules": {"one_off_lead_s": 1},
}
HOURLY = Recurrence("0 * * * *", None, "UTC")


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    slack_app.slack.users = {
        "U0ALICE": {"id": "U0ALICE", "tz": "Europe/Berlin"},
        "U0ADMIN": {"id": "U0ADMIN"},
    }
    trading_tools.RUNS.clear()
    return await slack_app.start(**CONFIG)


def payload(message: Message) -> dict[str, Any]:
    return (message.metadata or {}).get("event_payload") or {}


def headlines(app: SlackHarness, channel: str = "C0CHAN") -> list[Message]:
    return [m for m in app.slack.top_level(channel) if payload(m).get("kind") == "schedule"]


def cards(app: SlackHarness, channel: str, thread: str) -> list[Message]:
    return [m for m in app.slack.thread(channel, thread) if payload(m).get("kind") == "approval"]


def replies(app: SlackHarness, channel: str, thread: str) -> list[Message]:
    """What the bot shows in a thread under its first message, finished."""
    return [
        m
        for m in app.slack.thread(channel, thread)
        if m.ts != thread and not m.streaming and not is_progress(m)
    ]


def shown_in(message: Message, kind: str) -> str:
    """Every text of type ``kind`` anywhere in the message's blocks: mrkdwn texts a line
    each, rich text's text elements run together."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == kind and isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(message.blocks)
    return ("" if kind == "text" else "\n").join(found)


def approve_button(card: Message) -> str:
    return next(
        str(element["value"])
        for block in card.blocks
        if block.get("type") == "actions"
        for element in block["elements"]
        if element.get("action_id") == "approval_approve"
    )


async def schedule_now(
    app: SlackHarness, prompt: str = PROMPT, channel: str = "C0CHAN", owner: str = "U0ALICE"
) -> Schedule:
    """A schedule made as the tool makes one, due now: the scheduler's next tick fires it."""
    made = await app.state.shared.schedules.create(
        team=TEAM,
        owner=owner,
        channel=channel,
        prompt=prompt,
        recurrence=HOURLY,
        next_at=time.time(),
        max_per_person=10,
        by=owner,
    )
    assert isinstance(made, Schedule)
    return made


async def outcome(app: SlackHarness, schedule_id: str, expected: str) -> None:
    async def kept() -> bool:
        schedule = await app.state.shared.schedules.get(schedule_id)
        return schedule is not None and schedule.last_outcome == expected

    await until_true(kept, 20)


def user_text(request: Request) -> str:
    return str([m for m in request["messages"] if m["role"] == "user"][-1]["content"])


def system_text(request: Request) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "system")


async def test_a_one_off_made_by_approval_runs_once_under_its_own_headline(
    app: SlackHarness,
) -> None:
    asked: list[str] = []

    def schedule_soon(request: Request) -> Reply:
        """The model asks for a run 6 s after it is asked (a worker may be slow to start)."""
        asked.append((datetime.now(UTC) + timedelta(seconds=6)).isoformat(timespec="seconds"))
        return calls(("schedule", {"prompt": PROMPT, "at": asked[0]}, "k1"))

    app.llm.add(
        schedule_soon,
        lambda request: text(f"Done: {json.loads(tool_results(request)['k1'])['id']}."),
        text("Two incidents, both resolved."),
    )
    await app.post(app.envelope(mention("summarise yesterday's incidents soon", "700.000001")))
    await until(lambda: bool(cards(app, "C0CHAN", "700.000001")))
    [card] = cards(app, "C0CHAN", "700.000001")
    said = shown_in(card, "text")
    assert f"Prompt: {PROMPT}" in said
    runs_at = datetime.fromisoformat(asked[0]).astimezone(UTC).timestamp()
    assert f"<!date^{int(runs_at)}^" in shown_in(card, "mrkdwn")  # its one run
    assert await app.state.shared.schedules.of_owner(TEAM, "U0ALICE") == []  # not yet
    await app.click("approval_approve", approve_button(card), "U0ALICE", card.ts)
    await until(
        lambda: any(m.shown == "Done: s1." for m in app.slack.thread("C0CHAN", "700.000001"))
    )
    [schedule] = await app.state.shared.schedules.of_owner(TEAM, "U0ALICE")
    assert (schedule.channel, schedule.prompt, schedule.next_at) == ("C0CHAN", PROMPT, runs_at)

    await until(lambda: bool(headlines(app)), 20)  # the scheduler fires it at its time
    [headline] = headlines(app)
    assert headline.text == f":alarm_clock: Scheduled ask by <@U0ALICE>: {PROMPT}"
    assert payload(headline) == {"kind": "schedule", "schedule": "s1", "occurrence": runs_at}
    await until(lambda: bool(replies(app, "C0CHAN", headline.ts)), 20)
    [answer] = replies(app, "C0CHAN", headline.ts)
    assert answer.shown == "Two incidents, both resolved." and answer.thread_ts == headline.ts
    await outcome(app, "s1", "answered")
    run = app.llm.requests[2]
    assert user_text(run) == PROMPT  # the prompt, not the headline, as the person's words
    told = system_text(run)
    assert "the message below is a scheduled ask made by <@U0ALICE> earlier" in told
    assert "starts with who wrote it" not in told  # the prompt is alone, without its author
    ended = await app.state.shared.schedules.get("s1")
    assert ended is not None and ended.state == "ended" and ended.last_at == runs_at
    assert len(headlines(app)) == 1 and len(app.llm.requests) == 3  # once


async def test_bad_input_gets_no_card_and_the_card_shows_the_next_three_runs(
    app: SlackHarness,
) -> None:
    app.llm.add(
        calls(("schedule", {"prompt": PROMPT, "cron": "*/5 * * * *"}, "bad")),
        calls(("schedule", {"prompt": PROMPT, "cron": "0 9 * * 1-5"}, "good")),
        lambda request: text(f"Made: {tool_results(request)['good']}"),
    )
    await app.post(app.envelope(mention("every weekday at nine", "710.000001")))
    await app.llm.wait_for_requests(2)
    refused = tool_results(app.llm.requests[1])["bad"]
    assert "InvalidSchedule" in refused and "schedules.min_interval_s" in refused
    await until(lambda: bool(cards(app, "C0CHAN", "710.000001")))
    [card] = cards(app, "C0CHAN", "710.000001")  # the good call's alone
    assert "Runs: at 09:00, Monday through Friday (Europe/Berlin)" in shown_in(card, "text")
    dates = shown_in(card, "mrkdwn")
    assert dates.count("<!date^") == 3 + 1  # the next three runs, and the card's expiry
    assert "Next runs: <!date^" in dates
    await app.click("approval_approve", approve_button(card), "U0ALICE", card.ts)
    await until(
        lambda: any(m.shown.startswith("Made: ") for m in app.slack.thread("C0CHAN", "710.000001"))
    )
    [schedule] = await app.state.shared.schedules.of_owner(TEAM, "U0ALICE")
    assert schedule.recurrence == Recurrence("0 9 * * 1-5", None, "Europe/Berlin")


async def test_an_owner_who_left_the_workspace_pauses_the_schedule(app: SlackHarness) -> None:
    app.slack.users["U0ALICE"] = {"id": "U0ALICE", "deleted": True}
    schedule = await schedule_now(app)

    async def paused() -> bool:
        found = await app.state.shared.schedules.get(schedule.id)
        return found is not None and found.state == "paused"

    await until_true(paused, 20)
    found = await app.state.shared.schedules.get(schedule.id)
    assert found is not None and found.reason == OWNER_GONE
    assert headlines(app) == [] and app.llm.requests == []  # nothing ran as them


async def test_an_owner_who_left_a_private_channel_pauses_its_schedule(
    app: SlackHarness,
) -> None:
    """Slack says the channel is private and the owner is not among its members."""
    app.slack.channels["G0PRIV"] = {"id": "G0PRIV", "is_private": True}
    app.slack.members["G0PRIV"] = ["U0BOB"]
    schedule = await schedule_now(app, channel="G0PRIV")

    async def paused() -> bool:
        found = await app.state.shared.schedules.get(schedule.id)
        return found is not None and found.state == "paused"

    await until_true(paused, 20)
    found = await app.state.shared.schedules.get(schedule.id)
    assert found is not None and found.reason == owner_left("G0PRIV")
    assert found.reason == "owner is no longer in <#G0PRIV>"
    assert headlines(app, "G0PRIV") == [] and app.llm.requests == []  # nothing ran as them


async def test_a_role_lost_between_two_runs_takes_its_tool_from_the_second(
    app: SlackHarness,
) -> None:
    app.llm.add(text("first run"), text("second run"))
    await app.command("grant <@U0ALICE> analyst", user="U0ADMIN")
    schedule = await schedule_now(app)
    await outcome(app, schedule.id, "answered")
    assert "calculate" in app.llm.offered_tools(0)
    store = app.state.shared.schedules
    await store.pause(schedule.id, "U0ALICE", "paused by <@U0ALICE>")
    await app.command("revoke <@U0ALICE> analyst", user="U0ADMIN")
    await store.resume(schedule.id, "U0ALICE", time.time())  # due again at once
    await until(lambda: len(headlines(app)) == 2, 20)
    await app.llm.wait_for_requests(2)
    assert "calculate" not in app.llm.offered_tools(1)
    assert "get_time" in app.llm.offered_tools(1)  # still theirs by the default role
    await outcome(app, schedule.id, "answered")


async def test_in_a_dm_the_headline_opens_a_thread_the_answer_goes_in(
    app: SlackHarness,
) -> None:
    app.llm.add(text("Your reminder: check the release."))
    await schedule_now(app, "Remind me to check the release.", channel="D0ALICE")
    await until(lambda: bool(headlines(app, "D0ALICE")), 20)
    [headline] = headlines(app, "D0ALICE")
    await until(lambda: bool(replies(app, "D0ALICE", headline.ts)), 20)
    [answer] = replies(app, "D0ALICE", headline.ts)
    assert answer.shown == "Your reminder: check the release."
    assert "a scheduled ask made by <@U0ALICE>" in system_text(app.llm.requests[0])
    # A reply in the run's thread is a follow-up the bot answers there.
    app.llm.add(text("Noted."))
    reply_ts = app.slack.new_ts()
    event = direct_message("thanks, done", reply_ts, thread_ts=headline.ts)
    await app.post(app.envelope(event))
    await until(lambda: any(m.shown == "Noted." for m in replies(app, "D0ALICE", headline.ts)))


async def test_a_run_cannot_make_schedules(app: SlackHarness) -> None:
    """Its owner may make schedules in a conversation; a run is offered no ``schedule``
    tool, and a call of it all the same is refused: no card, no schedule."""
    app.llm.add(
        calls(("schedule", {"prompt": "Again.", "cron": "0 9 * * *"}, "again")),
        lambda request: text(f"Refused: {tool_results(request)['again']}"),
    )
    schedule = await schedule_now(app)
    await outcome(app, schedule.id, "answered")
    offered = app.llm.offered_tools(0)
    assert "schedule" not in offered and "get_time" in offered
    refused = tool_results(app.llm.requests[1])["again"]
    assert "A scheduled run cannot make schedules: ask in a conversation." in refused
    [headline] = headlines(app)
    assert cards(app, "C0CHAN", headline.ts) == []
    assert [s.id for s in await app.state.shared.schedules.of_owner(TEAM, "U0ALICE")] == [
        schedule.id
    ]


async def test_an_approval_card_in_a_run_mentions_its_owner(app: SlackHarness) -> None:
    app.llm.add(calls(("place_order", {"symbol": "ACME", "quantity": 1}, "o1")))
    await schedule_now(app, "Buy one ACME share.")
    await until(lambda: bool(headlines(app)), 20)
    [headline] = headlines(app)
    await until(lambda: bool(cards(app, "C0CHAN", headline.ts)), 20)
    [card] = cards(app, "C0CHAN", headline.ts)
    assert card.text == "<@U0ALICE> Approval needed: place_order"
    assert "<@U0ALICE>, your scheduled ask is waiting for this decision." in shown_in(
        card, "mrkdwn"
    )
    assert trading_tools.RUNS == []
