"""No broadcast from the model: whatever the model writes, or a tool returns, never notifies
a whole channel or a user group; a person's mention stays. End to end through the real
app's Web API client to the fake Slack, which records every call."""

from __future__ import annotations

import json

import pytest

from bot.slack.blocks.broadcasts import defused, whole_until
from tests.fakes.llm_server import calls, text
from tests.fakes.slack_harness import SlackHarness, mention

LOUD = (
    "Heads up <!channel> and <!here|here>, also <!everyone>; ping <!subteam^S0OPS|@ops> and "
    "<!subteam^S0SRE>, and ask <@U0ALICE> about <#C0CHAN>."
)
BROADCASTS = ("<!channel", "<!here", "<!everyone", "<!subteam")


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("<!channel>", "@channel"),
        ("<!here|here>", "@here"),
        ("<!everyone>", "@everyone"),
        ("<!subteam^S0OPS|@ops>", "@ops"),
        ("<!subteam^S0OPS>", "@group"),
        ("<@U0ALICE>", "<@U0ALICE>"),  # a person's mention stays
        ("<!date^1700000000^{date}|Nov 14>", "<!date^1700000000^{date}|Nov 14>"),
        ("&lt;!channel&gt;", "&lt;!channel&gt;"),  # shown literally already
    ],
)
def test_broadcast_mentions_become_plain_text(written: str, shown: str) -> None:
    assert defused(written) == shown


def test_streamed_text_is_never_cut_inside_a_mention() -> None:
    assert whole_until("see <!chan") == len("see ")
    assert whole_until("see <!channel> now") == len("see <!channel> now")
    assert whole_until("a < b, " + "x" * 100) == len("a < b, " + "x" * 100)  # no mention


def sent(app: SlackHarness) -> str:
    """Everything the bot sent to Slack's Web API, as one text."""
    return json.dumps([call.args for call in app.slack.calls], default=str)


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_models_broadcasts_never_reach_slack_as_mentions(
    slack_app: SlackHarness, streaming: bool
) -> None:
    app = await slack_app.start(slack={"streaming": streaming, "stream_buffer_chars": 1})
    long = (LOUD + "\n\n") * 90  # over 11,000 characters: two parts
    app.llm.add(
        calls(("calculate", {"expression": "1+1"}, "c1")),
        text(long, text_piece=3),  # streamed in pieces that cut the mentions
    )
    await app.post(app.envelope(mention("announce it", "800.000001")))
    answers = await app.answered("C0CHAN", "800.000001", count=2, within=30)
    out = sent(app)
    assert not [b for b in BROADCASTS if b in out], out[:500]
    assert "<@U0ALICE>" in out and "@channel" in out and "@ops" in out
    shown = "".join(a.shown for a in answers)
    assert "Heads up @channel and @here, also @everyone; ping @ops and @group" in shown


async def test_a_tools_result_cannot_page_the_channel(slack_app: SlackHarness) -> None:
    app = await slack_app.start(
        tools={"modules": ["tests.fakes.loud_tools"]}, slack={"streaming": True}
    )
    app.llm.add(calls(("loud", {}, "l1")), text("The tool said something loud."))
    await app.post(app.envelope(mention("run it", "801.000001")))
    await app.answered("C0CHAN", "801.000001")
    assert not [b for b in BROADCASTS if b in sent(app)]


async def test_a_workspace_may_allow_broadcasts(slack_app: SlackHarness) -> None:
    app = await slack_app.start(slack={"streaming": False, "allow_broadcast": True})
    app.llm.add(text("Everyone: <!channel>"))
    await app.post(app.envelope(mention("announce", "802.000001")))
    [answer] = await app.answered("C0CHAN", "802.000001")
    assert "<!channel>" in answer.shown
