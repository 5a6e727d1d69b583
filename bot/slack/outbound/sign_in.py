"""Sign-in cards in a turn's thread, and the start link sent to the person alone.

One card per server a parked turn waits for (its calls' sign-in requests to that server),
posted like the approval card: recorded in the delivery record's ``cards`` before and after
the post, tagged ``signin`` with its key, found by its tag when a post's outcome was never
learnt. Where only the requester reads the conversation (a DM, the agent pane:
``bot/slack/audience.py``) the card itself carries the link button; anywhere else the card
has none, and the link goes in an ephemeral message to the person (``chat.postEphemeral`` in
the thread), after which the requests are marked shown, so a retried park does not send it
again. The link is kept sealed in the request and opened here, in the worker, only to be
sent. A card whose requests were decided (connected, not now, expired) is rewritten to say so
(the card's words: ``bot/slack/blocks/sign_in.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.audience import read_by_requester_alone
from bot.slack.blocks.sign_in import card_blocks, card_text, ephemeral_blocks, ephemeral_text
from bot.slack.calls import safe_call
from bot.slack.outbound.approvals import post_card_once
from bot.slack.outbound.thread import TurnThread
from bot.turn.store.approvals import ApprovalRequest, Approvals
from bot.turn.store.lease import Aborted
from tools.mcp.oauth.account import Account

log = logging.getLogger(__name__)
SIGN_IN = "signin"  # the tag's kind

# Opens a request's sealed start link: (whose, which server, the sealed link) -> the URL
# (``OAuthSide.open_link``, bot/oauth/side.py).
LinkOpener = Callable[[Account, str, str], str]


def by_server(requests: Iterable[ApprovalRequest]) -> list[list[ApprovalRequest]]:
    """Sign-in requests grouped by server, in the order each server first appears: one card
    each (pure)."""
    groups: dict[str, list[ApprovalRequest]] = {}
    for request in requests:
        groups.setdefault(request.server, []).append(request)
    return list(groups.values())


def link_of(request: ApprovalRequest, open_link: LinkOpener | None) -> str:
    """The request's start link, unsealed ("" when it has none, or it cannot be opened
    here: the card then points at ``/agent connect``)."""
    if not request.link or open_link is None:
        return ""
    try:
        return open_link(Account(request.team, request.user), request.server, request.link)
    except Exception as exc:  # a link sealed with a key this process does not hold
        log.warning("the start link of %s cannot be opened (%s)", request.id, type(exc).__name__)
        return ""


async def show_sign_in(
    thread: TurnThread,
    approvals: Approvals,
    requests: list[ApprovalRequest],
    command: str,
    open_link: LinkOpener | None,
) -> None:
    """Post the card for one server's sign-in ``requests`` unless one shows them (then
    rewrite it), and send the person the link where the card cannot carry it."""
    client, turn, ledger = thread.client, thread.turn, thread.ledger
    private = read_by_requester_alone(turn.channel)
    first = requests[0]
    new = [r for r in requests if not r.card_ts]
    if not new:
        await refresh(client, approvals, requests, command, open_link)
    else:
        shown = new[0]

        async def post() -> str:
            link = link_of(shown, open_link) if private else ""
            response = await client.chat_postMessage(
                channel=turn.channel,
                thread_ts=turn.thread_ts,
                text=card_text(shown),
                blocks=card_blocks(shown, command, link),
                metadata=thread.tag(SIGN_IN, ref=shown.id),
            )
            return str(response["ts"])

        await post_card_once(thread, approvals, new, SIGN_IN, post)
    if private:
        return
    # As they are now: a retried park finds those it sent the link for marked shown.
    now = [await approvals.get(r.id) or r for r in requests]
    unsent = [r for r in now if r.open and not r.shown]
    link = next((u for u in (link_of(r, open_link) for r in unsent) if u), "")
    if not link:
        return
    if not ledger.valid():
        raise Aborted("the turn's lease is gone")
    sent = await safe_call(  # refused: the card still points at /agent connect
        client.chat_postEphemeral,
        channel=turn.channel,
        user=first.user,
        thread_ts=turn.thread_ts,
        text=ephemeral_text(first.server),
        blocks=ephemeral_blocks(first.server, link),
    )
    if sent is None:
        return
    for request in unsent:
        await approvals.mark_shown(request.id)


async def refresh(
    client: AsyncWebClient,
    approvals: Approvals,
    requests: Iterable[ApprovalRequest],
    command: str,
    open_link: LinkOpener | None,
) -> None:
    """Rewrite every sign-in card showing one of ``requests`` as its requests are now (best
    effort: a card that cannot be rewritten keeps what it showed; a click on it is answered
    from Redis anyway). A card shows the first of its requests still open, else the newest
    decided one."""
    cards = {r.card_ts: r for r in requests if r.card_ts and r.sign_in}
    for card_ts, one in cards.items():
        shown = [r for r in await approvals.of_turn(one.entry) if r.card_ts == card_ts]
        if not shown:
            continue
        now = next((r for r in shown if r.open), shown[-1])
        link = link_of(now, open_link) if read_by_requester_alone(now.channel) else ""
        await safe_call(
            client.chat_update,
            channel=now.channel,
            ts=card_ts,
            text=card_text(now),
            blocks=card_blocks(now, command, link),
        )
