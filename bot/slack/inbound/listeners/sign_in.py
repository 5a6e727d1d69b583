"""Clicks on a sign-in card or on the link sent to the person.

- "Connect <server>" is a link button: the browser opens the start link, and Slack sends a
  ``block_actions`` for it all the same (unacked, the button shows a warning): acked, nothing
  else to do.
- "Not now": only the person the turn is for may decline their sign-in (anyone else gets a
  polite ephemeral no); the card's open requests are decided ``denied``, which wakes the
  parked turn (the model is told they chose not to connect), the audit says
  ``signin_declined``, and the card shows it. A click on a request decided or expired
  changes nothing and says so.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.sign_in import CONNECT_ACTION, NOT_NOW_ACTION, card_text
from bot.slack.inbound.after_ack import AfterAck
from bot.slack.outbound.sign_in import refresh
from bot.state.audit import AuditLog
from bot.turn.store.approvals import ApprovalRequest, Approvals, ApprovalState, audited

log = logging.getLogger(__name__)

GONE = "This sign-in request is no longer open."
NOT_YOURS = "Sorry, only <@{user}> can decide about connecting their own account."


def register(
    app: AsyncApp, approvals: Approvals, audit: AuditLog, command: str, later: AfterAck
) -> None:
    """``command``: the slash command the sign-in cards point at (``slack.command``)."""

    @app.action(CONNECT_ACTION)
    async def on_connect(ack: AsyncAck) -> None:
        await ack()  # the link button opened the start link in the browser

    @app.action(NOT_NOW_ACTION)
    async def on_not_now(
        ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient
    ) -> None:
        await ack()
        try:
            request_id = str(body["actions"][0]["value"])
        except (KeyError, IndexError, TypeError):
            log.warning("a Not now button with an unreadable value")
            return
        clicker = str((body.get("user") or {}).get("id") or "")

        async def decline() -> None:
            request = await approvals.get(request_id)
            if request is None or not request.sign_in:
                await _tell(respond, GONE)
                return
            if clicker != request.user:
                await _tell(respond, NOT_YOURS.format(user=request.user))
                return
            state, decided = await approvals.decide(request_id, False, clicker)
            now = await approvals.get(request_id) or request
            if not decided:
                await _tell(respond, f"Nothing changed: {_already(now, state)}")
                await refresh(client, approvals, [now], command, None)
                return
            await audit.add(audited(now, "signin_declined", "not_now", clicker))
            # The card's other requests (more calls waiting for the same server) go with it.
            for other in await _on_the_card(approvals, now):
                _, also = await approvals.decide(other.id, False, clicker)
                if also:
                    declined = await approvals.get(other.id) or other
                    await audit.add(audited(declined, "signin_declined", "not_now", clicker))
            await refresh(client, approvals, [now], command, None)

        later.spawn(decline(), respond=respond, what="a Not now click")


async def _on_the_card(approvals: Approvals, request: ApprovalRequest) -> list[ApprovalRequest]:
    """The other open sign-in requests ``request``'s card shows."""
    if not request.card_ts:
        return []
    return [
        r
        for r in await approvals.of_turn(request.entry)
        if r.card_ts == request.card_ts and r.id != request.id and r.open and r.sign_in
    ]


def _already(request: ApprovalRequest, state: ApprovalState | None) -> str:
    if state is ApprovalState.EXPIRED and request.state is ApprovalState.EXPIRED:
        return "this sign-in request expired before your click."
    return f"this sign-in request was decided already ({card_text(request)})."


async def _tell(respond: AsyncRespond, text: str) -> None:
    try:
        await respond(text=text, response_type="ephemeral", replace_original=False)
    except Exception as exc:
        log.info("could not tell the person who clicked (%s)", type(exc).__name__)
