"""The bot brought into a thread people started without it, and threads with several
people: end to end (signed requests to /slack/events, the fake Slack Web API, the fake LLM,
the real Redis)."""

from __future__ import annotations

import pytest

from bot.slack.inbox.thread import PAGE_SIZE
from bot.state.redis.thread_key import ThreadKey
from tests.fakes.llm_server import text
from tests.fakes.slack_harness import SlackHarness, channel_message, mention
from tests.fakes.slack_server import BOT_USER, TEAM, FakeSlack

PEOPLE = {"U0ALICE": "Alice", "U0BOB": "Bob", "U0CAROL": "Carol", "U0DAVE": "Dave"}
ROOT = "300.000001"


def know_people(slack: FakeSlack) -> None:
    for user, name in PEOPLE.items():
        slack.users[user] = {"id": user, "name": name.lower(), "profile": {"display_name": name}}


def thread_of(slack: FakeSlack, count: int, root: str = ROOT) -> list[str]:
    """``count`` messages by Alice, Bob and Carol in turn (the first is the root); their
    lines as the model should read them."""
    people = ["U0ALICE", "U0BOB", "U0CAROL"]
    whole, fraction = root.split(".")
    lines = []
    for n in range(count):
        ts = f"{whole}.{int(fraction) + n:06d}"
        user = people[n % 3]
        said = f"message {n}: the order ships on day {n}"
        slack.add_user_message("C0CHAN", ts, user, said, thread_ts=None if n == 0 else root)
        lines.append(f"<@{user}> ({PEOPLE[user]}): {said}")
    return lines


def last_user_message(app: SlackHarness, request: int = -1) -> str:
    messages = app.llm.requests[request]["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


async def test_mentioned_in_a_thread_of_30_messages(slack_app: SlackHarness) -> None:
    app = await slack_app.start()
    know_people(app.slack)
    lines = thread_of(app.slack, 30)
    app.llm.add(text("Day 29 is the last."), text("Twenty-nine days."))
    # Dave mentions the bot with nothing else: "look at this thread".
    app.slack.add_user_message("C0CHAN", "300.000031", "U0DAVE", f"<@{BOT_USER}>", ROOT)
    await app.post(app.envelope(mention("", "300.000031", user="U0DAVE", thread_ts=ROOT)))
    await app.answered("C0CHAN", ROOT)

    given = last_user_message(app)
    assert given == "\n".join(
        [
            "Earlier messages in this thread, before you were mentioned (oldest first):",
            *lines,
            "(end of earlier messages)",
            "",
            "<@U0DAVE> (Dave): (mentioned you without a message: read this thread and answer "
            "what it needs)",
        ]
    )
    status = app.slack.calls_to("agents.sessions.setStatus")[0]
    assert status.args["title"] == "Look at this thread"  # what people see while it works
    system = app.llm.requests[0]["messages"][0]["content"]
    assert "each person's message starts with who wrote it" in system
    # One page of conversations.replies: only what came before the mention.
    [replies] = app.slack.calls_to("conversations.replies")
    assert replies.args["limit"] == str(PAGE_SIZE) and replies.args["ts"] == ROOT
    assert replies.args["latest"] == "300.000031"
    assert sorted(c.args["user"] for c in app.slack.calls_to("users.info")) == sorted(PEOPLE)

    # A later turn in the thread: no conversations.replies, no users.info (cached).
    app.slack.add_user_message("C0CHAN", "300.000040", "U0ALICE", "how many days?", ROOT)
    await app.post(app.envelope(channel_message("how many days?", "300.000040", thread_ts=ROOT)))
    await app.answered("C0CHAN", ROOT, count=2)
    assert len(app.slack.calls_to("conversations.replies")) == 1
    assert len(app.slack.calls_to("users.info")) == len(PEOPLE)
    second = app.llm.requests[1]["messages"]
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "user"]
    assert second[1]["content"] == given  # the thread stays in the history
    assert second[-1]["content"] == "<@U0ALICE> (Alice): how many days?"


async def test_a_long_thread_is_read_page_by_page_and_cut_to_the_budget(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(history={"token_budget": 500})
    know_people(app.slack)
    lines = thread_of(app.slack, 450)
    app.llm.add(text("Read it."))
    await app.post(app.envelope(mention("what is the latest day?", "300.000451", thread_ts=ROOT)))
    await app.answered("C0CHAN", ROOT)

    pages = app.slack.calls_to("conversations.replies")
    assert len(pages) == 3  # 450 messages, 200 a page
    assert [bool(p.args.get("cursor")) for p in pages] == [False, True, True]
    given = last_user_message(app)
    head, rest = given.split("\n", 1)
    shown, question = rest.split("\n(end of earlier messages)\n\n")
    kept = shown.split("\n")
    assert kept == lines[-len(kept) :]  # the newest, in order
    assert head == (
        "Earlier messages in this thread, before you were mentioned (oldest first; "
        f"{450 - len(kept)} older ones left out):"
    )
    assert 10 < len(kept) < 60
    assert len(shown) <= 500 * 4  # within the budget (four characters a token at first)
    assert question == "<@U0ALICE> (Alice): what is the latest day?"


@pytest.mark.cluster
async def test_replies_between_people_are_heard_and_not_answered(slack_app: SlackHarness) -> None:
    app = await slack_app.start()
    know_people(app.slack)
    app.llm.add(text("Stock is 40."), text("Carol is checking the shelf."))
    await app.post(app.envelope(mention("how much stock?", ROOT)))
    await app.answered("C0CHAN", ROOT)
    # Bob and Carol talk to each other in the thread: kept, not answered.
    to_carol = channel_message("<@U0CAROL> can you check the shelf?", "300.000002", user="U0BOB")
    to_bob = channel_message("<@U0BOB> on it", "300.000003", user="U0CAROL")
    # And a CI bot posts its result there (slack.answer_bots is off): kept, not answered.
    ci = channel_message("build 41 failed", "300.000005", user="", subtype="bot_message")
    ci.update(bot_id="B0CI", username="CI", bot_profile={"id": "B0CI", "name": "CI"})
    del ci["user"]
    for reply in (to_carol, to_bob, ci):
        reply["thread_ts"] = ROOT
        assert (await app.post(app.envelope(reply)))[0] == 200
    # Alice asks the thread (no one named): answered, with what Bob and Carol said.
    await app.post(app.envelope(channel_message("so who checks?", "300.000006", thread_ts=ROOT)))
    answers = await app.answered("C0CHAN", ROOT, count=2)
    assert [a.shown for a in answers] == ["Stock is 40.", "Carol is checking the shelf."]
    assert len(app.llm.requests) == 2  # the two replies were never answered
    assert last_user_message(app) == "\n".join(
        [
            "Replies in this thread since your last answer, between other people (not to you):",
            "<@U0BOB> (Bob): <@U0CAROL> (Carol) can you check the shelf?",
            "<@U0CAROL> (Carol): <@U0BOB> (Bob) on it",
            "CI (a bot): build 41 failed",
            "(end of those replies)",
            "",
            "<@U0ALICE> (Alice): so who checks?",
        ]
    )
    assert app.slack.calls_to("conversations.replies") == []


async def test_a_shared_channel_thread_is_one_conversation(slack_app: SlackHarness) -> None:
    """Slack Connect: ``event.team`` and ``user_team`` name the author's workspace, the
    envelope's ``team_id`` the bot's. People from the other workspace hold the default role
    (their own workspace's admin status gives nothing here)."""
    roles = {
        "member": {"default": True, "tools": ["get_time"]},
        "admin": {"workspace_admins": True, "admin": True, "tools": ["*"]},
    }
    app = await slack_app.start(roles=roles)
    know_people(app.slack)
    app.slack.users["U0EXT"] = {
        "id": "U0EXT",
        "team_id": "T0OTHER",
        "is_admin": True,
        "profile": {"display_name": "Erin", "team": "T0OTHER"},
    }
    app.llm.add(text("Hello both."), text("Yes, Erin."), text("Started by Erin."), text("Sure."))
    await app.post(app.envelope(mention("hi", ROOT)))
    await app.answered("C0CHAN", ROOT)
    external = channel_message(
        "can you help me too?", "300.000002", user="U0EXT", thread_ts=ROOT, user_team="T0OTHER"
    )
    external["team"] = "T0OTHER"
    await app.post(app.envelope(external))
    await app.answered("C0CHAN", ROOT, count=2)
    assert last_user_message(app) == "<@U0EXT> (Erin): can you help me too?"
    assert len(app.llm.requests[1]["messages"]) == 4  # system, the first turn, this one
    offered = [t["function"]["name"] for t in app.llm.requests[1].get("tools") or ()]
    assert offered == ["get_time"]

    # A thread started from the other workspace takes the home people's follow-ups.
    started = mention("from our side", "310.000001", user="U0EXT")
    started["team"] = started["user_team"] = "T0OTHER"
    await app.post(app.envelope(started))
    await app.answered("C0CHAN", "310.000001")
    await app.post(app.envelope(channel_message("me too", "310.000002", thread_ts="310.000001")))
    await app.answered("C0CHAN", "310.000001", count=2)
    assert last_user_message(app) == "<@U0ALICE> (Alice): me too"


async def test_a_thread_slack_will_not_give_still_gets_an_answer(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    app = await slack_app.start()
    know_people(app.slack)
    thread_of(app.slack, 5)
    app.slack.fail("conversations.replies", "missing_scope")
    app.slack.fail("users.info", "ratelimited", status=500, times=10)
    app.llm.add(text("I could not read the thread, but here is what I know."))
    await app.post(app.envelope(mention("summarize", "300.000006", thread_ts=ROOT)))
    [answer] = await app.answered("C0CHAN", ROOT)
    assert answer.shown.startswith("I could not read the thread")
    assert last_user_message(app) == "<@U0ALICE>: summarize"
    assert "read 0 earlier messages of thread 300.000001" in caplog.text
    assert "Slack call conversations_replies failed in C0CHAN: missing_scope" in caplog.text


@pytest.mark.cluster
async def test_mentions_delivered_late_are_not_read_twice(slack_app: SlackHarness) -> None:
    """Bob's mention reaches the bot after Carol's (Slack redelivered it): Carol's turn reads
    the thread without Bob's message, which is a turn of its own."""
    app = await slack_app.start()
    know_people(app.slack)
    app.slack.add_user_message("C0CHAN", ROOT, "U0ALICE", "the shelf is empty")
    bob = f"<@{BOT_USER}> when is the next delivery?"
    app.slack.add_user_message("C0CHAN", "300.000002", "U0BOB", bob, ROOT)
    carol = f"<@{BOT_USER}> and how much flour is left?"
    app.slack.add_user_message("C0CHAN", "300.000003", "U0CAROL", carol, ROOT)
    app.llm.add(text("None left."), text("Tomorrow."))
    await app.post(
        app.envelope(
            mention("and how much flour is left?", "300.000003", "C0CHAN", "U0CAROL", ROOT)
        )
    )
    await app.answered("C0CHAN", ROOT)
    assert last_user_message(app) == "\n".join(
        [
            "Earlier messages in this thread, before you were mentioned (oldest first):",
            "<@U0ALICE> (Alice): the shelf is empty",
            "(end of earlier messages)",
            "",
            "<@U0CAROL> (Carol): and how much flour is left?",
        ]
    )
    await app.post(
        app.envelope(mention("when is the next delivery?", "300.000002", "C0CHAN", "U0BOB", ROOT))
    )
    await app.answered("C0CHAN", ROOT, count=2)
    assert last_user_message(app) == "<@U0BOB> (Bob): when is the next delivery?"
    assert len(app.slack.calls_to("conversations.replies")) == 1


async def test_a_thread_already_in_the_history_is_not_read_again(slack_app: SlackHarness) -> None:
    """Which threads the bot is in was lost (Redis kept the history, not that mark): a new
    mention there finds the thread's turns in the history and asks Slack nothing."""
    app = await slack_app.start()
    know_people(app.slack)
    thread_of(app.slack, 3)
    app.llm.add(text("First."), text("Second."))
    await app.post(app.envelope(mention("first", "300.000004", thread_ts=ROOT)))
    await app.answered("C0CHAN", ROOT)
    assert len(app.slack.calls_to("conversations.replies")) == 1
    assert app.services is not None
    state = app.services.state
    await state.client.delete(state.keys.participation(ThreadKey(TEAM, "C0CHAN", ROOT)))
    await app.post(app.envelope(mention("again", "300.000005", thread_ts=ROOT)))
    await app.answered("C0CHAN", ROOT, count=2)
    assert len(app.slack.calls_to("conversations.replies")) == 1
    assert last_user_message(app) == "<@U0ALICE> (Alice): again"
