"""Each channel its own agent, end to end: signed requests to the real app, the fake Slack
and the fake model. What the model is told and offered in a channel, a call outside the
channel's tools refused as it runs, a Slack Connect channel under the ``external`` entry,
notes remembered in one thread and read in the channel's other threads (and nowhere else),
the "Saved to" line under the answer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.fakes.llm_server import calls, error, text, tool_results
from tests.fakes.slack_harness import SlackHarness, direct_message, mention
from tests.fakes.slack_server import TEAM, Message
from tests.waiting import until

CHANNELS: dict[str, Any] = {
    "C0SUPPORT": {
        "instructions": "You answer customer-support questions. Link the runbook.",
        "tools": ["get_time", "search_*"],
        "memory": True,
    },
    "C0ENG*": {"instructions": "You help the engineers deploy.", "memory": True},
    "external": {
        "instructions": "Careful: people of another company read this.",
        "tools": ["get_time"],
        "memory": False,
    },
    "D*": {"memory": True},
}
SUPPORT = CHANNELS["C0SUPPORT"]["instructions"]
ENG = CHANNELS["C0ENG*"]["instructions"]
EXTERNAL = CHANNELS["external"]["instructions"]


def system_of(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def everything_in(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"])


def saved_lines(answer: Message) -> list[str]:
    return [
        element["text"]
        for block in answer.blocks
        if block.get("type") == "context"
        for element in block.get("elements") or ()
        if str(element.get("text", "")).startswith("Saved to ")
    ]


async def ask(
    app: SlackHarness, event: dict[str, Any], *, shared: bool | None = False
) -> list[Message]:
    """Send ``event`` as Slack would (``shared``: the envelope's is_ext_shared_channel, which
    Slack always sends; None: left out, as in a turn an earlier build queued) and wait for
    its thread's answer."""
    envelope = app.envelope(event)
    if shared is not None:
        envelope["is_ext_shared_channel"] = shared
    assert (await app.post(envelope))[0] == 200
    return await app.answered(event["channel"], event.get("thread_ts") or event["ts"])


async def test_each_channel_has_its_own_instructions_after_the_base_prompt(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(system_prompt="You are the ACME assistant.", channels=CHANNELS)
    app.llm.add(text("Support here."), text("Eng here."), text("Plain here."))
    await ask(app, mention("help", "800.000001", channel="C0SUPPORT"))
    await ask(app, mention("deploy?", "800.000002", channel="C0ENGTOOLS"))
    await ask(app, mention("hello", "800.000003", channel="C0RANDOM"))
    support, eng, plain = (system_of(r) for r in app.llm.requests)
    assert support.startswith("You are the ACME assistant.")
    assert SUPPORT in support and ENG not in support
    assert support.index("Slack channel conversation") < support.index(SUPPORT)  # surface first
    assert ENG in eng and SUPPORT not in eng
    assert SUPPORT not in plain and ENG not in plain and "## " not in plain


async def test_a_channels_tools_are_narrowed_and_a_call_outside_them_refused_as_it_runs(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(channels=CHANNELS)
    app.llm.add(
        calls(("calculate", {"expression": "6*7"}, "c1"), ("get_time", {}, "c2")),
        text("I could not calculate that here."),
        text("Anything goes here."),
    )
    await ask(app, mention("6*7?", "801.000001", channel="C0SUPPORT"))
    assert app.llm.offered_tools(0) == ["get_time", "remember"]
    results = tool_results(app.llm.requests[1])
    refused = json.loads(results["c1"])
    assert refused["error"] == "ToolNotAllowed"
    assert "This channel's settings do not offer it." in refused["message"]
    assert "error" not in results["c2"]  # get_time ran
    # Another channel narrows nothing: every tool as the roles give them.
    await ask(app, mention("hi", "801.000002", channel="C0ENGTOOLS"))
    assert {"get_time", "calculate", "remember"} <= set(app.llm.offered_tools(2))


async def test_a_slack_connect_channel_falls_to_the_external_entry(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(channels=CHANNELS)
    app.llm.add(text("Shared."), text("Looked up."), text("Ours."), text("Unknown."))
    await ask(app, mention("hi", "802.000001", channel="C0PARTNER"), shared=True)
    shared = app.llm.requests[0]
    assert EXTERNAL in system_of(shared)
    assert app.llm.offered_tools(0) == ["get_time"]  # and no remember: memory is off there
    # A turn whose event did not say (queued by an earlier build): Slack is asked.
    app.slack.channels["C0OTHER"] = {"id": "C0OTHER", "is_ext_shared": True}
    await ask(app, mention("hi", "802.000002", channel="C0OTHER"), shared=None)
    assert EXTERNAL in system_of(app.llm.requests[1])
    # The event says it is not shared: nobody is asked, the channel is the workspace's.
    await ask(app, mention("hi", "802.000003", channel="C0OWN"))
    assert EXTERNAL not in system_of(app.llm.requests[2])
    assert len(app.slack.calls_to("conversations.info")) == 1
    # Slack cannot say (the lookup fails): taken as shared, the narrower settings apply.
    await ask(app, mention("hi", "802.000004", channel="C0UNKNOWN"), shared=None)
    assert EXTERNAL in system_of(app.llm.requests[3])


async def test_a_note_remembered_in_one_thread_is_read_in_the_channels_other_threads_only(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(channels=CHANNELS)
    note = "Refunds over $500 need a manager."
    app.llm.add(
        calls(("remember", {"note": note}, "r1")),
        text("Noted: refunds over $500 need a manager."),
        text("A manager must approve it."),
        text("Deploy on Tuesday."),
    )
    [answer] = await ask(app, mention("remember: refunds over $500", "803.000001", "C0SUPPORT"))
    assert saved_lines(answer) == [f"Saved to this channel's memory: “{note}”"]
    assert "Noted" in answer.text
    # Another thread of the channel: the note is in the model's request, as a note.
    await ask(app, mention("a $700 refund?", "803.000002", channel="C0SUPPORT"))
    later = system_of(app.llm.requests[2])
    assert note in later and "saved by <@U0ALICE>" in later
    assert later.index(SUPPORT) < later.index(note)  # instructions, then notes
    # Another channel: in no request.
    await ask(app, mention("deploy?", "803.000003", channel="C0ENGTOOLS"))
    assert note not in everything_in(app.llm.requests[3])
    [saved] = await app.state.shared.memory.notes("C0SUPPORT")
    assert (saved.text, saved.by, saved.channel) == (note, "U0ALICE", "C0SUPPORT")


async def test_a_dm_note_is_only_in_that_persons_dms(slack_app: SlackHarness) -> None:
    app = await slack_app.start(channels=CHANNELS)
    note = "I work from Lisbon."
    app.llm.add(
        calls(("remember", {"note": note}, "r1")),
        text("I will remember that."),
        text("Lisbon time, then."),
        text("No idea where you are."),
        text("Hello from support."),
    )
    [answer] = await ask(app, direct_message("remember I work from Lisbon", "804.000001"))
    assert saved_lines(answer) == [f"Saved to your memory: “{note}”"]
    await ask(app, direct_message("what time is it for me?", "804.000002"))
    assert note in system_of(app.llm.requests[2])
    bob = direct_message("where am I?", "804.000003", channel="D0BOB", user="U0BOB")
    await ask(app, bob)
    assert note not in everything_in(app.llm.requests[3])
    await ask(app, mention("hi", "804.000004", channel="C0SUPPORT"))  # Alice, in a channel
    assert note not in everything_in(app.llm.requests[4])


async def test_without_a_channels_section_the_turn_is_as_it_was(slack_app: SlackHarness) -> None:
    app = await slack_app.start(system_prompt="You are the ACME assistant.")
    app.llm.add(text("Hi."))
    [answer] = await ask(app, mention("hello", "805.000001", channel="C0SUPPORT"), shared=None)
    assert "remember" not in app.llm.offered_tools(0)
    system = system_of(app.llm.requests[0])
    assert system.startswith("You are the ACME assistant.\n\nThis is a Slack channel")
    assert "## " not in system and not saved_lines(answer)
    assert app.slack.calls_to("conversations.info") == []


async def test_the_saved_line_comes_with_a_failed_answer_and_with_a_long_answers_last_part(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(channels=CHANNELS, slack={"streaming": False})
    app.llm.add(calls(("remember", {"note": "Standup is at 9."}, "r1")), error(500))
    [failed] = await ask(app, mention("remember standup is at 9", "806.000001", "C0SUPPORT"))
    assert saved_lines(failed) == ["Saved to this channel's memory: “Standup is at 9.”"]
    long = "\n\n".join(f"Paragraph {n}: " + "word " * 400 for n in range(8))
    app.llm.add(calls(("remember", {"note": "Retro is on Friday."}, "r2")), text(long))
    parts = await ask(app, mention("remember the retro", "806.000002", "C0SUPPORT"))
    assert len(parts) > 1
    assert [saved_lines(part) for part in parts] == [[]] * (len(parts) - 1) + [
        ["Saved to this channel's memory: “Retro is on Friday.”"]
    ]


BUDGETS: dict[str, Any] = {
    "C0SMALL": {"budget": {"daily_tokens": 10}},
    "C0BUDGET": {"budget": {"daily_tokens": 3000}},
}


async def test_over_a_channels_budget_the_answer_names_the_channel(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(channels=BUDGETS)
    app.llm.add(text("First."), text("Elsewhere."))
    await ask(app, mention("hello", "807.000001", channel="C0SMALL"))  # 0 spent: admitted
    [refused] = await ask(app, mention("again", "807.000002", channel="C0SMALL"))
    assert "this channel's daily limit of 10 tokens (for everyone in <#C0SMALL> together)" in (
        refused.shown
    )
    assert len(app.llm.requests) == 1  # the model was not called for the second
    await ask(app, mention("hello", "807.000003", channel="C0ELSEWHERE", user="U0ALICE"))
    assert len(app.llm.requests) == 2  # the channel's limit is the channel's alone


async def test_twenty_turns_at_once_overshoot_a_channels_budget_by_at_most_one_estimate(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(
        channels=BUDGETS, llm={"max_tokens": 200}, queue={"concurrency": 20}
    )
    # Every admitted call waits for the others: all 20 reserve while the admitted ones hold.
    answer = asyncio.Event()
    app.llm.add(*(text("Answered.", hold=answer, usage=(150, 50)) for _ in range(20)))
    events = [mention(f"q{n}", f"808.{n + 1:06d}", channel="C0BUDGET") for n in range(20)]
    for event in events:
        envelope = app.envelope(event)
        envelope["is_ext_shared_channel"] = False
        assert (await app.post(envelope))[0] == 200

    def refused() -> int:
        shown = (m.shown for e in events for m in app.slack.thread("C0BUDGET", e["ts"]))
        return sum("<#C0BUDGET>" in text for text in shown)

    await until(lambda: refused() + len(app.llm.requests) == 20, 30)
    answer.set()
    answers = [(await app.answered("C0BUDGET", e["ts"], within=30))[0].shown for e in events]
    assert answers.count("Answered.") == len(app.llm.requests) == 20 - refused()
    assert 0 < refused() < 20
    assert app.services is not None
    _, day = app.services.budgets.today()
    (channel,) = await app.state.budgets.spent(TEAM, day, ["channel:C0BUDGET"])
    assert channel.held_tokens == 0  # every call settled
    # The holds of the calls under way passed the limit, by less than one call's estimate.
    assert 3000 < channel.peak_spent <= 3000 + channel.peak_tokens
    assert channel.tokens == 200 * len(app.llm.requests)
