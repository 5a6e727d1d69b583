"""What the model is told about the Slack around a turn (bot/slack/inbox/context.py): in a
channel, that each message starts with who wrote it; in a schedule's run, whose scheduled
ask its message is, and nothing that says the message starts with its author (a run's
message is the prompt alone)."""

from __future__ import annotations

from bot.process.state import State
from bot.slack.inbox.context import SlackContext
from bot.turn.model import Turn, TurnKind


def run(channel: str) -> Turn:
    return Turn(
        "T0TEAM",
        channel,
        "1700000000.000100",
        "U0ALICE",
        "Summarise yesterday's incidents.",
        "1700000000.000100",
        "schedule:s1:1700000000",
        TurnKind.SCHEDULED,
    )


async def test_a_run_in_a_channel_is_a_scheduled_ask_made_by_its_owner(state: State) -> None:
    said = await SlackContext(state.threads.pane)(run("C0OPS"))
    assert said == (
        "This turn is a scheduled run: the message below is a scheduled ask made by "
        "<@U0ALICE> earlier, and it runs now as theirs, in their name. They are not watching "
        "as it runs, so answer it fully without asking them anything first; your answer is "
        "posted under the run's headline, where people may reply.\n\n"
        "This is a Slack channel: people in it may read the answer. To mention someone, "
        "write <@U…> exactly; do not start your answer with your own name."
    )
    assert "starts with who wrote it" not in said


async def test_a_run_in_a_dm_says_whose_ask_it_is(state: State) -> None:
    said = await SlackContext(state.threads.pane)(run("D0ALICE"))
    assert said == (
        "This turn is a scheduled run: the message below is a scheduled ask made by "
        "<@U0ALICE> earlier, and it runs now as theirs, in their name. They are not watching "
        "as it runs, so answer it fully without asking them anything first; your answer is "
        "posted under the run's headline, where people may reply."
    )


async def test_in_a_channel_thread_each_message_starts_with_its_author(state: State) -> None:
    mention = Turn("T0TEAM", "C0OPS", "1.1", "U0BOB", "hi", "1.1", "Ev1", TurnKind.MENTION)
    said = await SlackContext(state.threads.pane)(mention)
    assert said.startswith(
        "This is a Slack channel conversation: each person's message starts with who wrote it"
    )
