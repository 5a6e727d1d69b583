"""Clicks on an approval card: Approve, Deny (with the reason typed in the card, if any),
and Show all (the call's arguments whole, in a modal).

Whoever clicks Approve or Deny must be allowed to decide (``approval.approvers``: the
requester, admins, named roles); anyone else gets a polite ephemeral no that names who may.
A request is decided once, by the first allowed click on any replica, and only while it is
open and before its deadline: a click on a decided or expired request changes nothing and
says so. The decision wakes the parked turn, is audited, and the card shows it.

Show all opens the arguments only for someone of the thread's workspace (the click names it
as theirs) or someone who may decide; an outside person (Slack Connect) gets a no and no
modal.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.approval_card import (
    APPROVE_ACTION,
    DENY_ACTION,
    REASON_ACTION,
    REASON_BLOCK,
    SHOW_ACTION,
    arguments_view,
    decision,
)
from bot.slack.blocks.deciders import who_decides
from bot.slack.calls import safe_call
from bot.slack.inbound.after_ack import AfterAck
from bot.slack.outbound.approvals import refresh
from bot.state.audit import AuditEntry, AuditLog
from bot.turn.store.approvals import ApprovalRequest, Approvals, ApprovalState, audited
from permissions.approval import ApprovalConfig, deciders
from permissions.policy import Person, Policy

log = logging.getLogger(__name__)

GONE = "This approval request is no longer open."
NOT_SHOWN = (
    "Sorry, the arguments of this call are shown only to people of this workspace and to "
    "those who may decide it."
)


def register(
    app: AsyncApp,
    approvals: Approvals,
    audit: AuditLog,
    policy: Policy,
    config: ApprovalConfig,
    later: AfterAck,
) -> None:
    who = deciders(config, policy.roles)

    async def allowed_to_decide(request: ApprovalRequest, clicker: str, clicker_team: str) -> bool:
        person = Person(request.team, clicker, request.channel, user_team=clicker_team)
        return await policy.may_decide(person, is_requester=clicker == request.user)

    @app.action(re.compile(f"^({APPROVE_ACTION}|{DENY_ACTION})$"))
    async def on_decision(
        ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient
    ) -> None:
        await ack()
        try:
            action = body["actions"][0]
            request_id, approved = str(action["value"]), action["action_id"] == APPROVE_ACTION
        except (KeyError, IndexError, TypeError):
            log.warning("an approval button with an unreadable value")
            return
        user = body.get("user") or {}
        clicker, clicker_team = str(user.get("id") or ""), str(user.get("team_id") or "")
        reason = _reason(body, request_id) if not approved else ""

        async def decide() -> None:  # may ask Slack who is an admin: after the ack
            request = await approvals.get(request_id)
            if request is None:
                await _tell(respond, GONE)
                return
            if not await allowed_to_decide(request, clicker, clicker_team):
                await _tell(
                    respond, f"Sorry, only {who_decides(who, request.user)} can decide this."
                )
                return
            state, decided = await approvals.decide(request_id, approved, clicker, reason)
            if not decided:
                now = await approvals.get(request_id) or request
                await _tell(respond, f"Nothing changed: {_already(now, state)}")
                await refresh(client, approvals, [now], who)
                return
            now = await approvals.get(request_id) or request
            await audit.add(_entry(now, clicker))
            await refresh(client, approvals, [now], who)

        later.spawn(decide(), respond=respond, what="an approval click")

    @app.action(SHOW_ACTION)
    async def on_show_all(
        ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient
    ) -> None:
        await ack()
        try:
            request_id = str(body["actions"][0]["value"])
        except (KeyError, IndexError, TypeError):
            return
        request = await approvals.get(request_id)
        trigger = body.get("trigger_id")
        if request is None:
            await _tell(respond, GONE)
            return
        user = body.get("user") or {}
        clicker, clicker_team = str(user.get("id") or ""), str(user.get("team_id") or "")
        # Of the thread's workspace, as the click names it (no look-up: the trigger is good
        # for 3 seconds); else only someone who may decide.
        inside = bool(clicker_team) and clicker_team == request.team
        if not inside and not await allowed_to_decide(request, clicker, clicker_team):
            log.info("Show all refused to %s of another workspace", clicker)
            await _tell(respond, NOT_SHOWN)
            return
        if trigger:
            # The modal opens now, not after the ack: the trigger would be gone.
            await safe_call(client.views_open, trigger_id=trigger, view=arguments_view(request))

    @app.action(REASON_ACTION)
    async def on_reason_typed(ack: AsyncAck) -> None:
        await ack()  # the reason goes with the Deny click; typing it needs no answer


def _reason(body: dict[str, Any], request_id: str) -> str:
    values = ((body.get("state") or {}).get("values") or {}).get(REASON_BLOCK + request_id) or {}
    return str((values.get(REASON_ACTION) or {}).get("value") or "").strip()


def _already(request: ApprovalRequest, state: ApprovalState | None) -> str:
    if state is ApprovalState.EXPIRED and request.state is ApprovalState.EXPIRED:
        return "this request expired before your click."
    return f"this request was decided already ({decision(request)})."


def _entry(request: ApprovalRequest, clicker: str) -> AuditEntry:
    approved = request.state is ApprovalState.APPROVED
    action = "approval_approved" if approved else "approval_denied"
    return audited(
        request,
        action,
        request.state.value,
        clicker,
        requester=request.user,
        reason=request.reason,
    )


async def _tell(respond: AsyncRespond, text: str) -> None:
    try:
        await respond(text=text, response_type="ephemeral", replace_original=False)
    except Exception as exc:
        log.info("could not tell the person who clicked (%s)", type(exc).__name__)
