"""A Slack turn's approver: each call that needs a person's yes opens a request and parks
the turn; when the turn resumes, the request's decision answers.

Approved: the call runs (once; a call cut off after it started runs again only when its
tool is idempotent, like any call cut off by a crash). Denied: the model is told who denied
it and why. Expired: the model is told nobody decided in time. Every request, decision and
expiry is in the audit log (decisions by the click's listener, expiries where they are
seen). A person's turns have at most ``approval.max_open_per_person`` requests open at once
(bot/turn/approval_cap.py): past it the call is refused and nobody is asked.
"""

from __future__ import annotations

import json
from typing import Any

from bot.state.approval_quota import ApprovalQuota
from bot.state.audit import AuditLog
from bot.turn.approval_cap import over_cap, place_for
from bot.turn.model import QueuedTurn
from bot.turn.store.approvals import ApprovalRequest, Approvals, ApprovalState, audited
from tools.approval import Approved, Refused, Verdict
from tools.call_context import current_call
from tools.definition import Tool
from tools.errors import CallDeferred

WAITING = "waiting for a person's approval"
INTERRUPTED = (
    "{tool} was approved, then interrupted when the worker running it stopped; whether it took "
    "effect is unknown. Check before asking for it again."
)

GONE = (
    "{tool} did not run: its approval request is no longer kept (it was opened long ago and "
    "its decision is gone). Ask for it again if it is still wanted."
)


def refusal(request: ApprovalRequest, timeout_s: float) -> str:
    """What the model is told about a call that was not approved."""
    if request.state is ApprovalState.DENIED:
        why = f": {request.reason}" if request.reason else ""
        return f"{request.tool} was denied by <@{request.by}>{why}. It did not run."
    minutes = max(round(timeout_s / 60), 1)
    return (
        f"{request.tool} was not approved: nobody decided within {minutes} minute"
        f"{'s' if minutes != 1 else ''}. It did not run."
    )


class TurnApprover:
    def __init__(
        self,
        approvals: Approvals,
        audit: AuditLog,
        queued: QueuedTurn,
        *,
        timeout_s: float,
        quota: ApprovalQuota | None = None,
        max_open: int = 5,
    ) -> None:
        self.approvals = approvals
        self.audit = audit
        self.queued = queued
        self.turn = queued.turn
        self.timeout_s = timeout_s
        self.quota = quota  # the person's open requests, at most ``max_open`` (None: no cap)
        self.max_open = max_open

    async def __call__(self, tool: Tool, arguments: dict[str, Any]) -> Verdict:
        call = current_call()
        if call is None:  # not inside the loop: nobody to ask for this call
            return Refused(f"{tool.name} needs a person's approval, and none can be asked here.")
        try:
            request, opened = await self.approvals.open(
                self.queued, call.call_id, tool.name, _arguments(arguments), self.timeout_s
            )
        except LookupError:  # asked before, and no longer kept: nobody's decision is known
            return Refused(GONE.format(tool=tool.name))
        if self.quota is not None and request.open and not (request.due or request.card_ts):
            place = await place_for(self.approvals, self.quota, request, self.max_open)
            if not place.taken:
                return Refused(over_cap(tool.name, request.user, place.open, self.max_open))
        if opened:
            await self._audit(request, "approval_requested", "pending")
        if request.open and await self.approvals.expire_due([request]):
            await self._audit(request, "approval_expired", "expired")
            request = await self.approvals.get(request.id) or request
        if request.open:
            raise CallDeferred(tool.name, WAITING)
        if request.state is ApprovalState.APPROVED:
            runs = await self.approvals.use(request.id)
            if runs > 1 and (not tool.idempotent or runs > 2):
                return Refused(INTERRUPTED.format(tool=tool.name))
            return Approved()
        return Refused(refusal(request, self.timeout_s))

    async def _audit(self, request: ApprovalRequest, action: str, outcome: str) -> None:
        await self.audit.add(audited(request, action, outcome))


def _arguments(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
