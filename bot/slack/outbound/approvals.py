"""Approval cards in a turn's thread: posted once per set of calls a turn waits for
(recorded before and after, found by its tag when a post's outcome was never learnt), and
rewritten from the requests whenever a decision changes what they show (the card's words:
``bot/slack/blocks/approval_card.py``). A sign-in request has a card of its own
(``sign_in.py``)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.approval_card import card_blocks, card_text
from bot.slack.calls import safe_call
from bot.slack.outbound.thread import TurnThread
from bot.turn.store.approvals import ApprovalRequest, Approvals
from bot.turn.store.lease import Aborted
from permissions.approval import Deciders

log = logging.getLogger(__name__)
APPROVAL = "approval"  # the tag's kind


async def show_card(
    thread: TurnThread,
    approvals: Approvals,
    requests: list[ApprovalRequest],
    deciders: Deciders,
) -> None:
    """Post the card for the requests no card shows yet; rewrite those that show some.
    ``deciders``: who may decide, as the card says."""
    client, turn = thread.client, thread.turn
    new = [r for r in requests if not r.card_ts]
    if not new:
        await refresh(client, approvals, requests, deciders)
        return

    async def post() -> str:
        response = await client.chat_postMessage(
            channel=turn.channel,
            thread_ts=turn.thread_ts,
            text=card_text(new),
            blocks=card_blocks(new, deciders),
            metadata=thread.tag(APPROVAL, ref=new[0].id),
        )
        return str(response["ts"])

    await post_card_once(thread, approvals, new, APPROVAL, post)


async def post_card_once(
    thread: TurnThread,
    approvals: Approvals,
    new: list[ApprovalRequest],
    kind: str,
    post: Callable[[], Awaitable[str]],
) -> None:
    """The card for ``new`` (requests no card shows yet) posted once, whatever crashes: its
    key recorded in the delivery record before the post and its ts after; a post whose outcome
    was never learnt is found by its tag (``kind``, ``ref`` = the key) instead of posted
    twice. ``post`` posts it and returns its ts."""
    turn, ledger = thread.turn, thread.ledger
    record, key = ledger.record, new[0].id
    ts = record.cards.get(key, "")
    if not ts and record.card_posting == key:
        found = await thread.find_own()
        ts = next(
            (
                m.ts
                for m in found
                if m.is_for(turn.message_ts, kind) and (m.payload or {}).get("ref") == key
            ),
            "",
        )
    if not ts:
        record.card_posting = key
        await ledger.save()
        if not ledger.valid():
            raise Aborted("the turn's lease is gone")
        ts = await post()
    record.cards[key], record.card_posting = ts, ""
    await ledger.save()
    await approvals.show_on([r.id for r in new], ts)


async def refresh(
    client: AsyncWebClient,
    approvals: Approvals,
    requests: Iterable[ApprovalRequest],
    deciders: Deciders,
) -> None:
    """Rewrite every approval card showing one of ``requests`` as the requests are now
    (best effort: a card that cannot be rewritten keeps what it showed; a click on it is
    answered from Redis anyway). Sign-in cards: ``sign_in.refresh``."""
    cards = {r.card_ts: r for r in requests if r.card_ts and not r.sign_in}
    for card_ts, one in cards.items():
        shown = [r for r in await approvals.of_turn(one.entry) if r.card_ts == card_ts]
        await safe_call(
            client.chat_update,
            channel=one.channel,
            ts=card_ts,
            text=card_text(shown),
            blocks=card_blocks(shown, deciders),
        )
