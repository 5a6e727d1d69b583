"""The waiting note as Slack gets it: a link to the card and who may decide, the model's
tool names escaped (for a sign-in: who must connect which server, escaped), and a note
whose post was applied but never confirmed is found by its tag and not posted again."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace

import pytest

from bot.slack.blocks.waiting_note import sign_in_waiting_text, waiting_text
from bot.slack.identity import BotIdentity
from bot.slack.outbound.waiting_note import SlackWaitingNote
from bot.turn.ports import DeliveryFailed
from bot.turn.store.approvals import SIGN_IN, ApprovalRequest
from bot.turn.waiting_note import the_wait
from permissions.approval import Deciders
from tests.fakes.deadline import NoDeadline
from tests.fakes.in_memory_slack import InMemorySlack
from tests.fakes.slack_server import FakeSlack, Message

ADMINS = Deciders(
    requester=True, admins=True, roles=(), members=("U0ADMIN",), workspace_admins=False
)


def request(tool: str, card_ts: str = "100.000005", rid: str = "r1") -> ApprovalRequest:
    now = time.time()
    return ApprovalRequest(
        id=rid,
        entry="1-1",
        call_id=f"c-{rid}",
        tool=tool,
        arguments="{}",
        team="T1",
        channel="C1",
        thread_ts="100.000001",
        message_ts="100.000002",
        user="U1",
        created=now,
        deadline=now + 60,
        card_ts=card_ts,
    )


def notes(world: FakeSlack) -> list[Message]:
    return [
        m
        for m in world.thread("C1", "100.000001")
        if ((m.metadata or {}).get("event_payload") or {}).get("kind") == "waiting"
    ]


async def test_a_note_applied_but_never_confirmed_is_not_posted_twice() -> None:
    world = FakeSlack()
    world.add_user_message("C1", "100.000001", "U1", "buy it")
    world.add_user_message("C1", "100.000002", "U1", "buy", thread_ts="100.000001")
    lost = ["chat.postMessage"]

    def after(method: str) -> None:
        if method in lost:
            lost.remove(method)
            raise TimeoutError("applied, but the answer never came")

    client = InMemorySlack(world, threading.Lock(), after=after)
    note = SlackWaitingNote(client, BotIdentity(client), ADMINS)
    requests = [request("place_order"), request("cancel_orders", rid="r2")]
    with pytest.raises(DeliveryFailed):
        await note.tell(requests, "100.000005", NoDeadline(), look_first=False)
    await note.tell(requests, "100.000005", NoDeadline(), look_first=True)
    [posted] = notes(world)
    said = json.dumps(posted.blocks)
    assert (
        "<https://test.slack.com/archives/C1/p100000005?thread_ts=100.000001&cid=C1"
        "|the approval card> (`place_order`, `cancel_orders`)"
    ) in said
    assert "<@U1>, <@U0ADMIN> or an admin can approve or deny it there" in said
    assert (posted.metadata or {})["event_payload"]["ref"] == "100.000005"


def test_the_model_s_words_cannot_mention_or_link() -> None:
    said = waiting_text(["<!channel> `x`", "<https://evil|ok>"], "", "<@U1>")
    assert "<!channel>" not in said and "&lt;!channel&gt;" in said
    assert "<https://evil" not in said
    assert "the approval card above" in said  # no link to give: no link made up


def test_the_wait_is_the_card_its_open_requests_are_on() -> None:
    first = request("a", card_ts="", rid="r0")  # not shown on a card (yet)
    shown = [request("b", rid="r1"), request("c", rid="r2")]
    other = request("d", card_ts="100.000009", rid="r3")
    wait, on_it = the_wait([first, *shown, other])
    assert wait == "100.000005" and on_it == shown
    assert the_wait([first]) == ("r0", [first])


async def test_a_turn_waiting_for_a_sign_in_says_who_must_connect_what() -> None:
    world = FakeSlack()
    world.add_user_message("C1", "100.000001", "U1", "push it")
    client = InMemorySlack(world, threading.Lock())
    note = SlackWaitingNote(client, BotIdentity(client), ADMINS)
    signin = replace(request("gh_push", card_ts=""), kind=SIGN_IN, server="github")
    await note.tell([signin], signin.id, NoDeadline(), look_first=False)
    [posted] = notes(world)
    said = json.dumps(posted.blocks)
    assert "This thread waits for <@U1> to connect *github*." in said
    assert "approve or deny" not in said and "gh_push" not in said


def test_a_server_name_cannot_mention_link_or_hide_in_the_sign_in_note() -> None:
    said = sign_in_waiting_text("U1", ["<!here>", "<https://evil|ok>", "\u202egh"], "")
    assert "<!here>" not in said and "&lt;!here&gt;" in said
    assert "<https://evil" not in said and "[U+202E]gh" in said
    assert "sign-in card" not in said  # no link to give: none made up
    linked = sign_in_waiting_text("U1", ["github", "github"], "https://x.slack.com/archives/C1/p1")
    assert "*github* (<https://x.slack.com/archives/C1/p1|the sign-in card>)." in linked
    assert linked.count("*github*") == 1  # each server once
