"""The sign-in's blocks (pure): valid Block Kit; the start link only where the person alone
reads it (the DM or agent-pane card, the ephemeral message), never on the channel's card;
"Not now" carrying the request; the decided states; a server's name never formatting, a
mention or a link."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bot.slack.blocks.sign_in import (
    CONNECT_ACTION,
    NOT_NOW_ACTION,
    card_blocks,
    card_text,
    ephemeral_blocks,
    ephemeral_text,
)
from bot.turn.store.approvals import SIGN_IN, ApprovalRequest, ApprovalState

LINK = "https://bot.example.com/oauth/start?state=0/abcdefghijklmnop"
HOSTILE = "<!channel> *gh* <https://evil.example|ok> `x` \u202ebuh"


def a_sign_in(server: str = "GitHub", **fields: Any) -> ApprovalRequest:
    request = ApprovalRequest(
        "0/r1", "0/1-1", "c1", "gh_push", "", "T1", "C1", "1.0", "1.0", "U0ALICE", 1e9, 1e9 + 900
    )
    return replace(request, kind=SIGN_IN, server=server, **fields)


def valid(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks as slack_sdk's models read them back: each parses, validates and is
    written out the same."""
    parsed = Block.parse_all(blocks)
    assert len(parsed) == len(blocks)
    for block, raw in zip(parsed, blocks, strict=True):
        assert block is not None
        block.validate_json()
        assert block.to_dict() == raw
    return blocks


def said(blocks: list[dict[str, Any]]) -> str:
    """The rich text as a person reads it (a mention as <@U>)."""
    parts = []
    for block in blocks:
        for section in block.get("elements", ()) if block["type"] == "rich_text" else ():
            for element in section["elements"]:
                parts.append(
                    f"<@{element['user_id']}>" if element["type"] == "user" else element["text"]
                )
    return "".join(parts)


def buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def urls(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["url"] for b in buttons(blocks) if "url" in b]


def test_the_channels_card_has_no_link_only_not_now() -> None:
    request = a_sign_in()
    blocks = valid(card_blocks(request, "/agent"))
    assert said(blocks) == (
        "⏸ Waiting for <@U0ALICE> to connect GitHub to continue (15 minutes). "
        "<@U0ALICE>: use the button I sent you, or /agent connect GitHub"
    )
    [not_now] = buttons(blocks)
    assert (not_now["action_id"], not_now["value"], not_now["text"]["text"]) == (
        NOT_NOW_ACTION,
        "0/r1",
        "Not now",
    )
    assert urls(blocks) == [] and "oauth/start" not in json.dumps(blocks)
    assert card_text(request) == "⏸ Waiting for <@U0ALICE> to connect GitHub to continue"
    styled = [e for e in blocks[0]["elements"][0]["elements"] if e.get("style")]
    assert [(e["text"], e["style"]) for e in styled] == [
        ("GitHub", {"bold": True}),
        ("/agent connect GitHub", {"code": True}),
    ]


def test_the_private_card_carries_the_link_button() -> None:
    request = a_sign_in(deadline=1e9 + 600)
    blocks = valid(card_blocks(request, "/ask", LINK))
    assert said(blocks) == (
        "⏸ Waiting for <@U0ALICE> to connect GitHub to continue (10 minutes). "
        "<@U0ALICE>: use the button below, or /ask connect GitHub"
    )
    connect, not_now = buttons(blocks)
    assert (connect["action_id"], connect["url"], connect["text"]["text"]) == (
        CONNECT_ACTION,
        LINK,
        "Connect GitHub",
    )
    assert not_now["action_id"] == NOT_NOW_ACTION and "url" not in not_now
    assert json.dumps(blocks).count(LINK) == 1  # on the button alone
    assert LINK not in card_text(request)


def test_the_ephemeral_is_one_line_and_the_link_button() -> None:
    blocks = valid(ephemeral_blocks("GitHub", LINK))
    assert said(blocks) == (
        "I need you to connect GitHub to continue. This button is yours alone; it opens once."
    )
    [connect] = buttons(blocks)
    assert (connect["action_id"], connect["url"]) == (CONNECT_ACTION, LINK)
    assert json.dumps(blocks).count(LINK) == 1
    assert LINK not in ephemeral_text("GitHub") and "GitHub" in ephemeral_text("GitHub")


@pytest.mark.parametrize(
    ("state", "by", "reason", "words"),
    [
        (ApprovalState.APPROVED, "U0ALICE", "", "✓ <@U0ALICE> connected GitHub"),
        (ApprovalState.DENIED, "U0ALICE", "", "<@U0ALICE> chose not to connect GitHub"),
        (ApprovalState.DENIED, "U0ALICE", "declined", "<@U0ALICE> chose not to connect GitHub"),
        (ApprovalState.DENIED, "U0ALICE", "failed", "Sign-in to GitHub failed"),
        (ApprovalState.DENIED, "U0ALICE", "unavailable", "Sign-in to GitHub failed"),
        (ApprovalState.EXPIRED, "", "", "Sign-in to GitHub expired"),
    ],
)
def test_a_decided_card_says_how_and_has_no_buttons(
    state: ApprovalState, by: str, reason: str, words: str
) -> None:
    request = a_sign_in(state=state, by=by, reason=reason)
    for link in ("", LINK):  # the link goes once the card is decided
        blocks = valid(card_blocks(request, "/agent", link))
        assert said(blocks) == words and buttons(blocks) == []
        assert LINK not in json.dumps(blocks)
    assert card_text(request) == words


def test_a_servers_name_is_never_formatting_a_mention_or_a_link() -> None:
    request = a_sign_in(HOSTILE)
    shown = HOSTILE.replace("\u202e", "[U+202E]")
    for blocks in (
        valid(card_blocks(request, "/agent")),
        valid(card_blocks(request, "/agent", LINK)),
        valid(card_blocks(replace(request, state=ApprovalState.APPROVED, by="U0ALICE"), "/x")),
        valid(ephemeral_blocks(HOSTILE, LINK)),
    ):
        text = json.dumps(blocks)
        assert '"mrkdwn"' not in text  # nothing is read as formatting: rich text only
        assert shown in said(blocks)  # as it is, its invisible character written out
        assert "\u202e" not in said(blocks)
        for button in buttons(blocks):
            assert "\u202e" not in button["text"]["text"]
    for notification in (card_text(request), ephemeral_text(HOSTILE)):
        assert "<!channel>" not in notification and "&lt;!channel&gt;" in notification
        assert "<https://evil" not in notification and "\u202e" not in notification
