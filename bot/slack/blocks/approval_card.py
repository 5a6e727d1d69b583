"""The approval card: the calls a turn waits for, each with who asked, its arguments and,
while it is open, Approve and Deny buttons and a box for a reason; once decided, who decided
and when (pure Block Kit).

The arguments are the model's words, so they are shown as code (escaped: they can neither
mention anyone nor link anywhere) and long values are cut; "Show all" opens them whole in a
modal.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack.blocks.escape import escaped
from bot.slack.blocks.limits import SECTION_TEXT_CHARS, shorten
from bot.turn.store.approvals import ApprovalRequest, ApprovalState

APPROVE_ACTION = "approval_approve"
DENY_ACTION = "approval_deny"
SHOW_ACTION = "approval_show"
REASON_ACTION = "approval_reason"
REASON_BLOCK = "approval_reason:"  # + the request id
VALUE_CHARS = 200  # an argument value longer than this is cut on the card
ARGUMENTS_CHARS = 1_500  # all of a call's arguments on the card
REASON_CHARS = 500


def card_text(requests: list[ApprovalRequest]) -> str:
    """The card's notification text."""
    names = ", ".join(r.tool for r in requests)
    return f"Approval needed: {names}"


def card_blocks(requests: list[ApprovalRequest]) -> list[dict[str, Any]]:
    asker = requests[0].user if requests else ""
    several = len(requests) > 1
    head = f":lock: <@{asker}>'s request needs approval before " + (
        "these tools run." if several else "this tool runs."
    )
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=head))]
    for request in requests:
        blocks += _call_blocks(request)
    return [block.to_dict() for block in blocks]


def _call_blocks(request: ApprovalRequest) -> list[Block]:
    shown, cut = arguments_text(request.arguments)
    body = f"*`{escaped(request.tool)}`*\n```{escaped(shown)}```"
    section = SectionBlock(
        text=MarkdownTextObject(text=shorten(body, SECTION_TEXT_CHARS)),
        accessory=ButtonElement(
            text=PlainTextObject(text="Show all"), action_id=SHOW_ACTION, value=request.id
        )
        if cut
        else None,
    )
    if not request.open:
        return [section, ContextBlock(elements=[MarkdownTextObject(text=decision(request))])]
    return [
        section,
        InputBlock(
            block_id=REASON_BLOCK + request.id,
            label=PlainTextObject(text=f"Reason, if you deny {request.tool} (optional)"),
            element=PlainTextInputElement(action_id=REASON_ACTION, max_length=REASON_CHARS),
            optional=True,
        ),
        ActionsBlock(
            elements=[
                ButtonElement(
                    text=PlainTextObject(text=shorten(f"Approve {request.tool}", 75)),
                    action_id=APPROVE_ACTION,
                    value=request.id,
                    style="primary",
                ),
                ButtonElement(
                    text=PlainTextObject(text=shorten(f"Deny {request.tool}", 75)),
                    action_id=DENY_ACTION,
                    value=request.id,
                    style="danger",
                ),
            ]
        ),
        ContextBlock(elements=[MarkdownTextObject(text=f"Expires {_when(request.deadline)}.")]),
    ]


def decision(request: ApprovalRequest) -> str:
    """The decision in words: who, when, and why."""
    if request.state is ApprovalState.APPROVED:
        return f":white_check_mark: Approved by <@{request.by}> · {_when(request.at)}"
    if request.state is ApprovalState.DENIED:
        why = f": {escaped(request.reason)}" if request.reason else ""
        return f":no_entry: Denied by <@{request.by}> · {_when(request.at)}{why}"
    if request.state is ApprovalState.EXPIRED:
        return f":hourglass: Expired · nobody decided by {_when(request.deadline)}"
    return "Waiting for a decision"


def arguments_text(arguments: str) -> tuple[str, bool]:
    """The call's arguments pretty-printed, long values cut; and whether anything was cut."""
    try:
        value = json.loads(arguments) if arguments else {}
    except (ValueError, RecursionError):  # the loop lets neither through; stored ones may
        text = arguments or "{}"
        return (shorten(text, ARGUMENTS_CHARS), len(text) > ARGUMENTS_CHARS)
    cut = False

    def short(item: Any) -> Any:
        nonlocal cut
        if isinstance(item, str) and len(item) > VALUE_CHARS:
            cut = True
            return item[: VALUE_CHARS - 1] + "…"
        if isinstance(item, dict):
            return {k: short(v) for k, v in item.items()}
        if isinstance(item, list):
            return [short(v) for v in item]
        return item

    try:
        text = json.dumps(short(value), indent=2, ensure_ascii=False)
    except RecursionError:
        return shorten(arguments, ARGUMENTS_CHARS), len(arguments) > ARGUMENTS_CHARS
    if len(text) > ARGUMENTS_CHARS:
        return shorten(text, ARGUMENTS_CHARS), True
    return text, cut


def arguments_view(request: ApprovalRequest) -> dict[str, Any]:
    """The modal "Show all" opens: every argument, whole (split over sections)."""
    try:
        whole = json.dumps(json.loads(request.arguments), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        whole = request.arguments
    pieces = [whole[i : i + 2_800] for i in range(0, len(whole), 2_800)][:90] or ["{}"]
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=f"```{escaped(piece)}```")) for piece in pieces
    ]
    return View(
        type="modal",
        title=PlainTextObject(text=shorten(request.tool, 24)),
        close=PlainTextObject(text="Close"),
        blocks=blocks,
    ).to_dict()


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M UTC on %d %b")
