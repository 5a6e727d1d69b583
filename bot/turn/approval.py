"""A Slack turn's approver: each call that needs a person's yes opens a request and parks
the turn; when the turn resumes, the request's decision answers.

Approved: the call runs, at most once on that approval: a call cut off after it started (its
worker died) is not run again, whatever the tool's ``idempotent`` says; the model is told it
was interrupted and may or may not have taken effect, and another run needs another request
(a new call of the tool opens one). Denied: the model is told who denied
it and why. Expired: the model is told nobody decided in time. Every request, decision and
expiry is in the audit log (decisions by the click's listener, expiries where they are
seen).
"""

from __future__ import annotations

import json
from typing import Any

from bot.state.audit import AuditLog
from bot.turn.model import QueuedTurn
from bot.turn.store.approvals import ApprovalRequest, Approvals, ApprovalState, audited
from tools.approval import Approved, Refused, Verdict
from tools.call_context import current_call
from tools.definition import Tool
from tools.errors import CallDeferred

WAITING = "waiting for a person's approval"
INTERRUPTED = (
    "{tool} was approved and started, then interrupted when the worker running it stopped: it "
    "may or may not have taken effect. It does not run again on that approval; check before "
    "calling it again, which asks a person anew."
)
INTERRUPTED_KIND = "Interrupted"  # the error kind of a call its worker's death cut off


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
    ) -> None:
        self.approvals = approvals
        self.audit = audit
        self.queued = queued
        self.turn = queued.turn
        self.timeout_s = timeout_s

    async def __call__(self, tool: Tool, arguments: dict[str, Any]) -> Verdict:
        call = current_call()
        if call is None:  # not inside the loop: nobody to ask for this call
            return Refused(f"{tool.name} needs a person's approval, and none can be asked here.")
        request, opened = await self.approvals.open(
            self.queued, call.call_id, tool.name, _arguments(arguments), self.timeout_s
        )
        if opened:
            await self._audit(request, "approval_requested", "pending")
        if request.open and await self.approvals.expire_due([request]):
            await self._audit(request, "approval_expired", "expired")
            request = await self.approvals.get(request.id) or request
        if request.open:
            raise CallDeferred(tool.name, WAITING)
        if request.state is ApprovalState.APPROVED:
            runs = await self.approvals.use(request.id)
            if runs > 1:  # an earlier run on this approval started: one approval, one run
                return Refused(INTERRUPTED.format(tool=tool.name), INTERRUPTED_KIND)
            return Approved()
        return Refused(refusal(request, self.timeout_s))

    async def _audit(self, request: ApprovalRequest, action: str, outcome: str) -> None:
        await self.audit.add(audited(request, action, outcome))


def _arguments(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
