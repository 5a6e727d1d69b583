"""A Slack turn's approver: each call that needs a person's yes opens a request and parks
the turn; when the turn resumes, the request's decision answers.

Approved: the call runs, at most once on that approval: a call cut off after it started (its
worker died) is not run again, whatever the tool's ``idempotent`` says; the model is told it
was interrupted and may or may not have taken effect, and another run needs another request
(a new call of the tool opens one). Denied: the model is told who denied it and why.
Expired: the model is told nobody decided within the request's time ("5 seconds", "15
minutes"). Every request, decision and expiry is in the audit log (decisions by the click's
listener, expiries where they are made).

A request keeps the arguments in the tool's own parameter order (the model's extra keys
after them) and what a person deciding needs to know of the tool: its one-line
description, where it comes from, whether it was marked destructive, and what the tool
says of the call when it has a preview (``Tool.preview``: the ``schedule`` tool's runs).

A person's turns have at most ``approval.max_open_per_person`` requests open at once
(bot/turn/approval_cap.py): past it the call is refused and nobody is asked.

An approved call refused before it started (an MCP server's 401 or 403: sign-in needed) gives
its run back (``not_started``): after the sign-in the same approval lets it run once.
"""

from __future__ import annotations

import json
from typing import Any

from bot.state.approval_quota import ApprovalQuota
from bot.state.audit import AuditLog
from bot.turn.approval_cap import over_cap, place_for
from bot.turn.model import QueuedTurn
from bot.turn.store.approvals import (
    ApprovalRequest,
    Approvals,
    ApprovalState,
    ToolFacts,
    audited,
)
from tools.approval import Approved, Refused, Verdict
from tools.call_context import current_call
from tools.definition import Tool
from tools.errors import CallDeferred
from tools.preview import CallPreview

WAITING = "waiting for a person's approval"
INTERRUPTED = (
    "{tool} was approved and started, then interrupted when the worker running it stopped: it "
    "may or may not have taken effect. It does not run again on that approval; check before "
    "calling it again, which asks a person anew."
)
INTERRUPTED_KIND = "Interrupted"  # the error kind of a call its worker's death cut off

GONE = (
    "{tool} did not run: its approval request is no longer kept (it was opened long ago and "
    "its decision is gone). Ask for it again if it is still wanted."
)


DESCRIPTION_CHARS = 200  # the tool's description kept with a request: its first line, cut


def refusal(request: ApprovalRequest, timeout_s: float) -> str:
    """What the model is told about a call that was not approved (``timeout_s``: the
    configured time, for a request that does not say how long it was open)."""
    if request.state is ApprovalState.DENIED:
        why = f": {request.reason}" if request.reason else ""
        return f"{request.tool} was denied by <@{request.by}>{why}. It did not run."
    waited = request.timeout_s or timeout_s
    return (
        f"{request.tool} was not approved: nobody decided within {duration(waited)}. "
        "It did not run."
    )


def duration(seconds: float) -> str:
    """A time in words, as a person says it: "5 seconds", "15 minutes", "2 hours",
    "1.5 hours", "3 days"."""
    for unit, size, up_to in (
        ("second", 1, 60),
        ("minute", 60, 90 * 60),
        ("hour", 3600, 48 * 3600),
        ("day", 86400, float("inf")),
    ):
        if seconds < up_to:
            amount = round(seconds / size, 1)
            if amount >= 10:
                amount = round(amount)
            number = f"{amount:g}"
            return f"{number} {unit}{'' if number == '1' else 's'}"
    raise AssertionError("unreachable")  # the last unit has no bound


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
        self._running: dict[str, str] = {}  # call id -> the approval its run was counted on

    async def __call__(self, tool: Tool, arguments: dict[str, Any]) -> Verdict:
        call = current_call()
        if call is None:  # not inside the loop: nobody to ask for this call
            return Refused(f"{tool.name} needs a person's approval, and none can be asked here.")
        preview = await tool.preview(arguments) if tool.preview is not None else None
        try:
            request, opened = await self.approvals.open(
                self.queued,
                call.call_id,
                tool.name,
                ordered_arguments(arguments, tool.parameters),
                self.timeout_s,
                facts(tool, preview),
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
            if runs > 1:  # an earlier run on this approval started: one approval, one run
                return Refused(INTERRUPTED.format(tool=tool.name), INTERRUPTED_KIND)
            self._running[call.call_id] = request.id
            return Approved()
        return Refused(refusal(request, self.timeout_s))

    async def not_started(self, tool: Tool) -> None:
        """The approved call now running was refused before it started (sign-in needed):
        its run is given back, so the approval still lets it run once."""
        call = current_call()
        request_id = self._running.pop(call.call_id, None) if call is not None else None
        if request_id is not None:
            await self.approvals.give_back(request_id)

    async def _audit(self, request: ApprovalRequest, action: str, outcome: str) -> None:
        await self.audit.add(audited(request, action, outcome))


def ordered_arguments(arguments: dict[str, Any], parameters: dict[str, Any]) -> str:
    """The model's arguments as JSON text, in the order of the tool's parameters (its
    schema's ``properties``), any the schema does not name after them in the model's order."""
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    named = [key for key in properties if key in arguments] if isinstance(properties, dict) else []
    ordered = {key: arguments[key] for key in named}
    ordered.update((key, value) for key, value in arguments.items() if key not in ordered)
    return json.dumps(ordered, ensure_ascii=False)


def facts(tool: Tool, preview: CallPreview | None = None) -> ToolFacts:
    """What the card shows of ``tool``: its description's first line (cut), its source,
    whether it was marked destructive (an MCP server's hint, or a Python tool's
    ``confirm=True``: its author said a person must look first), and what the tool says of
    this call (``preview``)."""
    lines = (tool.description or "").strip().splitlines()
    first = lines[0].strip() if lines else ""
    if len(first) > DESCRIPTION_CHARS:
        first = first[: DESCRIPTION_CHARS - 1] + "…"
    python = not tool.source.startswith("mcp")
    return ToolFacts(
        description=first,
        source=tool.source,
        destructive=bool(tool.hints.destructive) or (python and tool.confirm),
        preview=preview.to_json() if preview is not None else "",
    )
