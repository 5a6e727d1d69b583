"""The approval card: the calls a turn waits for, each with what the tool is, its arguments
and, while it is open, Approve and Deny buttons and a box for a reason; once decided, who
decided and when (pure Block Kit).

Nothing the model wrote, nor a tool's author or an MCP server, is ever in a mrkdwn text of
the card, where it could pass for the bot's own words: the arguments are in a
``rich_text_preformatted`` element (no value can end it, nothing in it is formatting), the
tool's description and a denial's reason in ``rich_text`` text elements, and every one of
them with its invisible characters written out (``[U+202E]``). mrkdwn holds only the bot's
own words, mentions of people by their IDs and Slack's dates (``<!date^…>``: each reader
sees their own time zone). What a tool says of a call (its preview: the ``schedule`` tool's
prompt, its recurrence in words) is rich text too; only its moments become dates. A call of
a scheduled run mentions the run's owner while it waits: nobody else watches its thread.
Long values are cut, saying where; "Show all" opens them whole, shown the same way, in a
modal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    RichTextBlock,
    RichTextElementParts,
    RichTextPreformattedElement,
    RichTextQuoteElement,
    RichTextSectionElement,
)
from slack_sdk.models.views import View

from bot.slack.blocks.arguments import ARGUMENTS_CHARS, VALUE_CHARS, cut_note, shown_arguments
from bot.slack.blocks.dates import slack_date
from bot.slack.blocks.deciders import who_decides
from bot.slack.blocks.escape import escaped, visible
from bot.slack.blocks.limits import shorten
from bot.turn.store.approvals import ApprovalRequest, ApprovalState
from permissions.approval import Deciders
from tools.preview import CallPreview

APPROVE_ACTION = "approval_approve"
DENY_ACTION = "approval_deny"
SHOW_ACTION = "approval_show"
REASON_ACTION = "approval_reason"
REASON_BLOCK = "approval_reason:"  # + the request id
REASON_CHARS = 500
DESCRIPTION_CHARS = 150  # the tool's description on the card
PREVIEW_VALUE_CHARS = 1_000  # each of a preview's facts on the card
PREVIEW_TIMES = 10  # a preview's moments on the card, at most
MODAL_PIECE_CHARS = 2_800  # the arguments in a modal: one preformatted block per piece
MODAL_PIECES = 90  # within a modal's 100 blocks

_Text = RichTextElementParts.Text
_CODE = RichTextElementParts.TextStyle(code=True)
_BOLD = RichTextElementParts.TextStyle(bold=True)
_ITALIC = RichTextElementParts.TextStyle(italic=True)

# The state of a card, in its header and in its notification text.
_STATES = {
    ApprovalState.PENDING: (":lock:", "Approval needed"),
    ApprovalState.APPROVED: (":white_check_mark:", "Approved"),
    ApprovalState.DENIED: (":no_entry:", "Denied"),
    ApprovalState.EXPIRED: (":hourglass:", "Expired"),
}
_MIXED = (":ballot_box_with_check:", "Decided")


def card_state(requests: Sequence[ApprovalRequest]) -> tuple[str, str]:
    """The card's emoji and word: "Approval needed" while any call waits, else what was
    decided ("Approved", "Denied", "Expired"; "Decided" when the calls went different ways)."""
    if not requests or any(r.open for r in requests):
        return _STATES[ApprovalState.PENDING]
    states = {r.state for r in requests}
    return _STATES[states.pop()] if len(states) == 1 else _MIXED


def card_text(requests: Sequence[ApprovalRequest]) -> str:
    """The card's notification text: its state and the tools (``Approved: place_order``);
    while a scheduled run's call waits, it starts by mentioning the run's owner, who is not
    watching the thread."""
    _, word = card_state(requests)
    if word == _MIXED[1]:
        each = ", ".join(f"{r.tool} {r.state.value}" for r in requests)
        return f"{word}: {each}"
    said = f"{word}: " + ", ".join(r.tool for r in requests)
    owner = _absent_owner(requests)
    return f"<@{owner}> {said}" if owner else said


def _absent_owner(requests: Sequence[ApprovalRequest]) -> str:
    """The requester to mention while the card waits: a scheduled run's owner ("" else)."""
    waiting = [r for r in requests if r.open]
    return waiting[0].user if waiting and waiting[0].mention and waiting[0].user else ""


def card_blocks(requests: Sequence[ApprovalRequest], deciders: Deciders) -> list[dict[str, Any]]:
    """The card for ``requests`` (one turn's calls), as they are now; ``deciders``: who the
    config lets decide."""
    emoji, word = card_state(requests)
    blocks: list[Block] = [HeaderBlock(text=PlainTextObject(text=f"{emoji} {word}"))]
    if requests:
        blocks.append(_intro(requests))
        waiting = [r for r in requests if r.open]
        if waiting:
            blocks.append(_who_decides(waiting, deciders))
    for request in requests:
        blocks += _call_blocks(request)
    return [block.to_dict() for block in blocks]


def _intro(requests: Sequence[ApprovalRequest]) -> RichTextBlock:
    """ "The assistant wants to run `X` in @U's turn": the call may come from what the model
    read (a prompt-injected page), not from the person whose turn it is."""
    verb = "wants to run " if any(r.open for r in requests) else "asked to run "
    tools: list[Any] = []
    for number, request in enumerate(requests):
        if number:
            tools.append(_Text(text=" and " if number == len(requests) - 1 else ", "))
        tools.append(_Text(text=visible(request.tool), style=_CODE))
    asker = requests[0].user
    turn: list[Any] = (
        [_Text(text=" in "), RichTextElementParts.User(user_id=asker), _Text(text="'s turn.")]
        if asker
        else [_Text(text=".")]
    )
    return RichTextBlock(
        elements=[
            RichTextSectionElement(elements=[_Text(text="The assistant " + verb), *tools, *turn])
        ]
    )


def _who_decides(waiting: Sequence[ApprovalRequest], deciders: Deciders) -> ContextBlock:
    asker = waiting[0].user
    who = who_decides(deciders, asker)
    if deciders.requester or not asker:
        said = f"Who may decide: {who}."
    else:
        said = f"<@{asker}> may not decide this; {who} may."
    owner = _absent_owner(waiting)
    if owner:
        said = f"<@{owner}>, your scheduled ask is waiting for this decision. {said}"
    deadline = min(r.deadline for r in waiting)
    return ContextBlock(
        elements=[MarkdownTextObject(text=f"{said} Expires {slack_date(deadline)}.")]
    )


def _call_blocks(request: ApprovalRequest) -> list[Block]:
    shown = shown_arguments(request.arguments, total_chars=ARGUMENTS_CHARS)
    preview = CallPreview.from_json(request.preview)
    blocks: list[Block] = [_call(request, shown.text, shown.cut, preview)]
    if preview is not None and preview.times:
        blocks.append(_times(preview))
    show_all = (
        ButtonElement(
            text=PlainTextObject(text="Show all"), action_id=SHOW_ACTION, value=request.id
        )
        if shown.cut
        else None
    )
    if not request.open:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=decision(request))]))
        if show_all is not None:
            blocks.append(ActionsBlock(elements=[show_all]))
        return blocks
    blocks.append(
        InputBlock(
            block_id=REASON_BLOCK + request.id,
            label=PlainTextObject(text=f"Reason, if you deny {request.tool} (optional)"),
            element=PlainTextInputElement(action_id=REASON_ACTION, max_length=REASON_CHARS),
            optional=True,
        )
    )
    buttons = [
        ButtonElement(
            text=PlainTextObject(text=shorten(f"Approve {request.tool}", 75)),
            action_id=APPROVE_ACTION,
            value=request.id,
            style="primary",
            confirm=_confirm(request) if request.destructive else None,
        ),
        ButtonElement(
            text=PlainTextObject(text=shorten(f"Deny {request.tool}", 75)),
            action_id=DENY_ACTION,
            value=request.id,
        ),
    ]
    blocks.append(ActionsBlock(elements=[*buttons, *([show_all] if show_all else [])]))
    return blocks


def _call(
    request: ApprovalRequest, arguments: str, cut: bool, preview: CallPreview | None
) -> RichTextBlock:
    """The tool (its name, its description, where it comes from, whether it is marked
    destructive), what the tool says of the call (its preview's facts, as plain text), then
    its arguments, preformatted."""
    head: list[Any] = [_Text(text=visible(request.tool), style=_BOLD)]
    if request.description:
        line = shorten(visible(request.description), DESCRIPTION_CHARS)
        head.append(_Text(text=" — " + line))
    facts: list[Any] = []
    if request.server:
        server = _Text(text=visible(request.server), style=_CODE)
        facts += [_Text(text="From the MCP server "), server]
    if request.destructive:
        if facts:
            facts.append(_Text(text=" · "))
        facts += [
            RichTextElementParts.Emoji(name="warning"),
            _Text(text=" Marked destructive: it may change or delete things.", style=_BOLD),
        ]
    elements: list[Any] = [RichTextSectionElement(elements=head)]
    if facts:
        elements.append(RichTextSectionElement(elements=facts))
    for label, value in preview.facts if preview is not None else ():
        line = shorten(visible(value), PREVIEW_VALUE_CHARS)
        elements.append(
            RichTextSectionElement(
                elements=[_Text(text=f"{visible(label)}: ", style=_BOLD), _Text(text=line)]
            )
        )
    elements.append(RichTextPreformattedElement(elements=[_Text(text=arguments)], border=0))
    if cut:
        elements.append(
            RichTextSectionElement(
                elements=[
                    _Text(
                        text=f"Long values are cut at {VALUE_CHARS:,} characters, the whole at "
                        f"{ARGUMENTS_CHARS:,}: Show all has every argument.",
                        style=_ITALIC,
                    )
                ]
            )
        )
    if request.state is ApprovalState.DENIED and request.reason:
        elements.append(
            RichTextQuoteElement(elements=[_Text(text="Reason: " + visible(request.reason))])
        )
    return RichTextBlock(elements=elements)


def _times(preview: CallPreview) -> ContextBlock:
    """The preview's moments as Slack's dates: each reader sees them in their own zone."""
    label = escaped(visible(preview.times_label or "When"))
    dates = ", ".join(slack_date(moment) for moment in preview.times[:PREVIEW_TIMES])
    return ContextBlock(elements=[MarkdownTextObject(text=f"{label}: {dates}")])


def _confirm(request: ApprovalRequest) -> ConfirmObject:
    """The dialog a destructive tool's Approve opens first, naming the tool."""
    return ConfirmObject(
        title=PlainTextObject(text="Run a destructive tool?"),
        text=PlainTextObject(
            text=shorten(
                f"{request.tool} is marked destructive: it may change or delete things. "
                "Approve this call with the arguments on the card?",
                300,
            )
        ),
        confirm=PlainTextObject(text=shorten(f"Approve {request.tool}", 30)),
        deny=PlainTextObject(text="Cancel"),
        style="danger",
    )


def decision(request: ApprovalRequest) -> str:
    """The decision in mrkdwn: who and when (a denial's reason is the card's, as rich text)."""
    if request.state is ApprovalState.APPROVED:
        return f":white_check_mark: Approved by <@{request.by}> · {slack_date(request.at)}"
    if request.state is ApprovalState.DENIED:
        return f":no_entry: Denied by <@{request.by}> · {slack_date(request.at)}"
    if request.state is ApprovalState.EXPIRED:
        return f":hourglass: Expired · nobody decided by {slack_date(request.deadline)}"
    return "Waiting for a decision"


def arguments_view(request: ApprovalRequest) -> dict[str, Any]:
    """The modal "Show all" opens: every argument, whole, shown as on the card."""
    whole = shown_arguments(request.arguments, value_chars=None).text
    limit = MODAL_PIECE_CHARS * MODAL_PIECES
    if len(whole) > limit:
        whole = whole[:limit] + "\n" + cut_note(limit)
    pieces = [whole[i : i + MODAL_PIECE_CHARS] for i in range(0, len(whole), MODAL_PIECE_CHARS)]
    blocks: list[Block] = [
        RichTextBlock(
            elements=[
                RichTextSectionElement(
                    elements=[
                        _Text(text="Every argument of "),
                        _Text(text=visible(request.tool), style=_CODE),
                    ]
                )
            ]
        ),
        *(
            RichTextBlock(elements=[RichTextPreformattedElement(elements=[_Text(text=piece)])])
            for piece in pieces
        ),
    ]
    return View(
        type="modal",
        title=PlainTextObject(text="Arguments"),
        close=PlainTextObject(text="Close"),
        blocks=blocks,
    ).to_dict()
