"""The approval card's blocks (pure): the model's words only inside rich text, never in a
mrkdwn field; invisible characters shown; the arguments readable; what the tool is; the
state in the header and the notification; the buttons as Slack's guidance says; who may
decide; a tool's preview of its call (the schedule tool's); a scheduled run's card mentioning
its owner."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from bot.slack.blocks.approval_card import (
    APPROVE_ACTION,
    DENY_ACTION,
    SHOW_ACTION,
    arguments_view,
    card_blocks,
    card_text,
)
from bot.slack.blocks.arguments import shown_arguments
from bot.slack.blocks.dates import slack_date
from bot.turn.store.approvals import ApprovalRequest, ApprovalState
from permissions.approval import ApprovalConfig, deciders
from permissions.config import RoleConfig
from tools.preview import CallPreview

INJECTED = "acct-1 ``` *:white_check_mark: read-only, safe to approve* ``` "
RLO_FILE = "\u202etxt.exe"
ROLES = {"admin": RoleConfig(admin=True, members=["U0ADMIN"])}
ANYONE = deciders(ApprovalConfig(), ROLES)  # the requester and admins
ADMINS_ONLY = deciders(ApprovalConfig(approvers=["admins"]), ROLES)


def a_request(arguments: dict[str, Any] | str, **fields: Any) -> ApprovalRequest:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    request = ApprovalRequest(
        "r1", "e1", "c1", "transfer", text, "T1", "C1", "1.0", "1.0", "U0ALICE", 1e9, 1e9 + 900
    )
    return replace(request, **fields)


def walk(node: Any, kind: str) -> list[dict[str, Any]]:
    """Every object of type ``kind`` anywhere in ``node``."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == kind:
            found.append(node)
        for value in node.values():
            found += walk(value, kind)
    elif isinstance(node, list):
        for value in node:
            found += walk(value, kind)
    return found


def mrkdwn(blocks: Any) -> str:
    return "\n".join(t["text"] for t in walk(blocks, "mrkdwn"))


def preformatted(blocks: Any) -> str:
    return "".join(p["text"] for e in walk(blocks, "rich_text_preformatted") for p in e["elements"])


def buttons(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["action_id"]: e for b in blocks if b["type"] == "actions" for e in b["elements"]}


def test_an_injected_argument_stays_inside_the_preformatted_block_and_controls_show() -> None:
    blocks = card_blocks([a_request({"account": INJECTED, "file": RLO_FILE})], ANYONE)
    shown = preformatted(blocks)
    assert shown == f'account: "{INJECTED}"\nfile: "[U+202E]txt.exe"'
    # No value reaches a mrkdwn text, where it would read as the bot's own formatting.
    words = mrkdwn(blocks)
    for value in ("acct-1", "white_check_mark: read-only", "safe to approve", "txt.exe"):
        assert value not in words
    assert "\u202e" not in json.dumps(blocks, ensure_ascii=False)  # never passed through
    # The header, the buttons and the input are plain text: no value there either.
    plain = " ".join(t["text"] for t in walk(blocks, "plain_text"))
    assert "acct-1" not in plain and "txt.exe" not in plain


def test_every_invisible_or_reordering_character_is_written_out() -> None:
    controls = (
        [chr(c) for c in range(0x202A, 0x202F)]
        + [chr(c) for c in range(0x2066, 0x206A)]
        + [chr(c) for c in range(0x200B, 0x2010)]
        + ["\u061c", "\ufeff", "\u2028", "\u2029", "\u00ad", "\x1b", "\r"]
    )
    text = preformatted(card_blocks([a_request({"x": "a".join(controls)})], ANYONE))
    for char in controls:
        assert char not in text and f"[U+{ord(char):04X}]" in text


def test_arguments_read_as_lines_in_the_stored_order_long_ones_cut_with_show_all() -> None:
    arguments = {
        "to": "acct-2",
        "amount": 10.5,
        "memo": "first line\nsecond line",
        "tags": ["a", {"b": None}],
        "long": "x" * 400,
    }
    blocks = card_blocks([a_request(arguments)], ANYONE)
    assert preformatted(blocks) == (
        'to: "acct-2"\n'
        "amount: 10.5\n"
        "memo: |\n"
        "  first line\n"
        "  second line\n"
        "tags:\n"
        '  - "a"\n'
        "  -\n"
        "    b: null\n"
        f'long: "{"x" * 300}" … (cut at 300 characters)'
    )
    assert "\\n" not in preformatted(blocks)  # lines, not escapes
    assert buttons(blocks)[SHOW_ACTION]["value"] == "r1"
    said = " ".join(t["text"] for t in walk(blocks, "text") if "style" in t)
    assert "cut at 300 characters" in said


def test_a_key_cannot_pass_for_another_line() -> None:
    text = preformatted(card_blocks([a_request({"a\nadmin": "yes", "b: c": 1})], ANYONE))
    assert text == '"a\\nadmin": "yes"\n"b: c": 1'


def test_show_all_shows_every_argument_the_same_safe_way() -> None:
    request = a_request({"account": INJECTED, "body": "y" * 5000 + "\n" + RLO_FILE})
    view = arguments_view(request)
    assert view["type"] == "modal" and not walk(view, "mrkdwn")
    whole = preformatted(view["blocks"])
    assert whole == shown_arguments(request.arguments, value_chars=None).text
    assert f'account: "{INJECTED}"' in whole and "y" * 5000 in whole
    assert "  [U+202E]txt.exe" in whole and "\u202e" not in json.dumps(view, ensure_ascii=False)


def test_what_a_person_needs_to_decide_the_tool_its_server_whose_turn() -> None:
    request = a_request(
        {},
        tool="wh_delete",
        description="Delete every pallet in an aisle <!channel> *now*",
        source="mcp warehouse",
        destructive=True,
    )
    blocks = card_blocks([request], ANYONE)
    texts = [t["text"] for t in walk(blocks, "text")]
    intro = next(b for b in blocks if b["type"] == "rich_text")["elements"][0]["elements"]
    assert [e.get("text") or e.get("user_id") for e in intro] == [
        "The assistant wants to run ",
        "wh_delete",
        " in ",
        "U0ALICE",
        "'s turn.",
    ]
    assert intro[1]["style"] == {"code": True} and intro[3]["type"] == "user"
    assert " — Delete every pallet in an aisle <!channel> *now*" in texts  # rich text: literal
    assert "<!channel>" not in mrkdwn(blocks)
    assert "warehouse" in texts and any("Marked destructive" in t for t in texts)
    assert "request" not in json.dumps(blocks)  # never "<@U>'s request"
    assert preformatted(blocks) == "(no arguments)"


def test_a_request_stored_before_the_tools_facts_were_kept_still_shows() -> None:
    blocks = card_blocks([a_request({"to": "acct-2"})], ANYONE)
    assert preformatted(blocks) == 'to: "acct-2"'
    assert not any("destructive" in t["text"] for t in walk(blocks, "text"))
    assert "confirm" not in buttons(blocks)[APPROVE_ACTION]


def test_buttons_approve_is_primary_deny_plain_and_a_destructive_tool_asks_to_confirm() -> None:
    plain = buttons(card_blocks([a_request({})], ANYONE))
    assert plain[APPROVE_ACTION]["style"] == "primary" and "confirm" not in plain[APPROVE_ACTION]
    assert "style" not in plain[DENY_ACTION]
    destructive = buttons(card_blocks([a_request({}, destructive=True)], ANYONE))
    confirm = destructive[APPROVE_ACTION]["confirm"]
    assert "transfer" in confirm["text"]["text"] and confirm["text"]["type"] == "plain_text"
    assert confirm["confirm"]["text"] == "Approve transfer"
    assert "style" not in destructive[DENY_ACTION]


def test_the_header_and_the_notification_say_the_state() -> None:
    request = a_request({})
    decided = {
        ApprovalState.APPROVED: replace(request, state=ApprovalState.APPROVED, by="U9", at=1e9),
        ApprovalState.DENIED: replace(
            request, state=ApprovalState.DENIED, by="U9", at=1e9, reason="*no* <!here>"
        ),
        ApprovalState.EXPIRED: replace(request, state=ApprovalState.EXPIRED, at=1e9 + 900),
    }
    header = card_blocks([request], ANYONE)[0]
    assert header["type"] == "header" and "Approval needed" in header["text"]["text"]
    assert card_text([request]) == "Approval needed: transfer"
    for state, word in (
        (ApprovalState.APPROVED, "Approved"),
        (ApprovalState.DENIED, "Denied"),
        (ApprovalState.EXPIRED, "Expired"),
    ):
        blocks = card_blocks([decided[state]], ANYONE)
        assert blocks[0]["text"]["text"].endswith(word) and "needs approval" not in str(blocks)
        assert card_text([decided[state]]) == f"{word}: transfer"
        assert APPROVE_ACTION not in buttons(blocks)
    denied = card_blocks([decided[ApprovalState.DENIED]], ANYONE)
    assert "Reason: *no* <!here>" in [t["text"] for t in walk(denied, "text")]  # rich text
    assert "<!here>" not in mrkdwn(denied)
    both = [decided[ApprovalState.APPROVED], replace(decided[ApprovalState.DENIED], tool="x")]
    assert card_text(both) == "Decided: transfer approved, x denied"


def test_times_are_slack_dates_each_reader_sees_in_their_own_zone() -> None:
    assert slack_date(1_700_000_000.5) == (
        "<!date^1700000000^{date_short_pretty} at {time}|14 Nov 2023 22:13 UTC>"
    )
    waiting = mrkdwn(card_blocks([a_request({})], ANYONE))
    assert f"Expires {slack_date(1e9 + 900)}." in waiting
    approved = replace(a_request({}), state=ApprovalState.APPROVED, by="U9", at=1e9)
    assert f"Approved by <@U9> · {slack_date(1e9)}" in mrkdwn(card_blocks([approved], ANYONE))


def test_the_card_says_who_may_decide_and_when_the_requester_may_not() -> None:
    assert "Who may decide: <@U0ALICE>, <@U0ADMIN> or an admin." in mrkdwn(
        card_blocks([a_request({})], ANYONE)
    )
    said = mrkdwn(card_blocks([a_request({})], ADMINS_ONLY))
    assert "<@U0ALICE> may not decide this; <@U0ADMIN> or an admin may." in said


def rich_text(blocks: Any) -> str:
    """What the card's rich text sections say (not preformatted)."""
    return "".join(
        part.get("text", "")
        for section in walk(blocks, "rich_text_section")
        for part in section["elements"]
    )


SCHEDULE_PREVIEW = CallPreview(
    facts=(
        ("Prompt", "Summarise <!channel> incidents \u202e"),
        ("Runs", "at 09:00, Monday through Friday (Europe/Berlin)"),
    ),
    times_label="Next runs",
    times=(1796112000.0, 1796198400.0, 1796284800.0),
)


def test_a_tools_preview_shows_its_facts_as_text_and_its_moments_as_dates() -> None:
    request = a_request(
        {"prompt": "Summarise", "cron": "0 9 * * 1-5"},
        tool="schedule",
        preview=SCHEDULE_PREVIEW.to_json(),
    )
    blocks = card_blocks([request], ANYONE)
    said = rich_text(blocks)
    assert "Prompt: Summarise <!channel> incidents [U+202E]" in said  # text: no broadcast
    assert "Runs: at 09:00, Monday through Friday (Europe/Berlin)" in said
    dates = mrkdwn(blocks)
    assert dates.count("<!date^") == 3 + 1  # the next three runs, and the card's expiry
    assert "Next runs: " + ", ".join(slack_date(t) for t in SCHEDULE_PREVIEW.times) in dates
    assert "<!channel>" not in dates
    assert preformatted(blocks) == 'prompt: "Summarise"\ncron: "0 9 * * 1-5"'  # still there
    decided = replace(request, state=ApprovalState.APPROVED, by="U0ADMIN", at=1e9 + 5)
    assert "Next runs: " in mrkdwn(card_blocks([decided], ANYONE))  # kept once decided


def test_a_card_without_a_preview_or_with_one_unreadable_shows_none() -> None:
    for stored in ("", "{not json"):
        blocks = card_blocks([a_request({"x": 1}, preview=stored)], ANYONE)
        assert "Next runs" not in mrkdwn(blocks) and "Prompt:" not in rich_text(blocks)


def test_a_scheduled_runs_card_mentions_its_owner_while_it_waits() -> None:
    """Its owner is not watching the run's thread: the card's notification and its words
    mention them until someone decides."""
    waiting = a_request({"symbol": "ACME"}, tool="place_order", mention=True)
    assert card_text([waiting]) == "<@U0ALICE> Approval needed: place_order"
    assert mrkdwn(card_blocks([waiting], ANYONE)).startswith(
        "<@U0ALICE>, your scheduled ask is waiting for this decision. Who may decide:"
    )
    decided = replace(waiting, state=ApprovalState.DENIED, by="U0ADMIN", at=1e9 + 5)
    assert card_text([decided]) == "Denied: place_order"
    assert "your scheduled ask" not in mrkdwn(card_blocks([decided], ANYONE))
    plain = a_request({"symbol": "ACME"}, tool="place_order")  # a turn someone watches
    assert card_text([plain]) == "Approval needed: place_order"
    assert "scheduled" not in mrkdwn(card_blocks([plain], ANYONE))
