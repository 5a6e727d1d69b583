"""A Slack turn's approver on the real Redis: an approved call that a server refused before
it started (sign-in needed) gives its run back, so the same approval lets it run once after
the sign-in; a sign-in request never takes a place under the per-person cap; a request keeps
the tool's preview of the call and whether its card mentions a scheduled run's owner."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.process.state import State
from bot.state.approval_quota import ApprovalQuota
from bot.turn.approval import TurnApprover
from bot.turn.approval_cap import place_for
from bot.turn.model import QueuedTurn, Turn, TurnKind
from bot.turn.store.approvals import SIGN_IN, sign_in_field
from tools import ApprovalToolset, StaticToolset, tool
from tools.call_context import CallScope, calling
from tools.errors import CallDeferred, CallNotStarted, NotApproved
from tools.preview import CallPreview

TURN = Turn("T1", "C1", "730.1", "U1", "push", message_ts="730.1")
pushed: list[str] = []
refusals: list[str] = []  # what the server answers next, first first


class SignInNeeded(CallNotStarted):
    pass


@tool(confirm=True)
def gh_push(branch: str) -> str:
    """Push a branch."""
    if refusals:
        raise SignInNeeded(refusals.pop(0))
    pushed.append(branch)
    return f"pushed {branch}"


async def test_an_approval_refused_at_the_door_still_runs_its_call_once(state: State) -> None:
    pushed.clear()
    approvals = state.threads.approvals
    queued = QueuedTurn(state.keys.shards.qualify(0, "1-7"), TURN)
    approver = TurnApprover(approvals, state.shared.audit, queued, timeout_s=600)
    wrapped = await ApprovalToolset(StaticToolset([gh_push]), approver).get_tool("gh_push")
    with calling(CallScope("c1", "gh_push")):
        with pytest.raises(CallDeferred):  # asked: the turn would park
            await wrapped.invoke({"branch": "main"})
        [request] = await approvals.of_turn(queued.entry_id, ["c1"])
        await approvals.decide(request.id, True, "U1")
        refusals.append("401: sign in first")
        with pytest.raises(SignInNeeded):
            await wrapped.invoke({"branch": "main"})
        after = await approvals.get(request.id)
        assert after is not None and after.uses == 0  # the run was given back
        assert await wrapped.invoke({"branch": "main"}) == "pushed main"  # once, after sign-in
        with pytest.raises(NotApproved) as again:  # and only once
            await wrapped.invoke({"branch": "main"})
    assert again.value.kind == "Interrupted"
    assert pushed == ["main"]


async def test_a_sign_in_takes_no_place_under_the_cap(state: State) -> None:
    approvals = state.threads.approvals
    quota = ApprovalQuota(state.client, state.keys)
    queued = QueuedTurn(state.keys.shards.qualify(0, "1-8"), TURN)
    approval, _ = await approvals.open(queued, "c1", "place_order", "{}", 600)
    assert (await place_for(approvals, quota, approval, 1)).taken  # the one place
    for n, call_id in enumerate(("c2", "c3"), start=1):
        signin, _ = await approvals.open(
            queued, call_id, "gh_push", "", 600, kind=SIGN_IN, field=sign_in_field(call_id, n)
        )
        assert (await place_for(approvals, quota, signin, 1)).taken
        assert await approvals.get(signin.id) is not None  # not withdrawn
    assert await quota.holders("T1", "U1") == [approval.id]
    full, _ = await approvals.open(queued, "c4", "place_order", "{}", 600)
    assert not (await place_for(approvals, quota, full, 1)).taken  # approvals still capped


async def test_a_request_keeps_the_tools_preview_and_whether_the_run_is_scheduled(
    state: State,
) -> None:
    """What the card needs after any replica rewrites it: the preview the tool gave when
    the request opened, and whether it mentions the run's owner (a scheduled run's)."""
    approvals = state.threads.approvals
    shown = CallPreview((("Prompt", "Ask."),), "Next runs", (1.0, 2.0, 3.0))

    async def preview(arguments: dict[str, Any]) -> CallPreview:
        return shown

    previewed = gh_push.replace(preview=preview)
    for number, (kind, mention) in enumerate(
        ((TurnKind.MENTION, False), (TurnKind.SCHEDULED, True)), start=9
    ):
        queued = QueuedTurn(state.keys.shards.qualify(0, f"1-{number}"), replace(TURN, kind=kind))
        approver = TurnApprover(approvals, state.shared.audit, queued, timeout_s=600)
        wrapped = await ApprovalToolset(StaticToolset([previewed]), approver).get_tool("gh_push")
        with calling(CallScope("c1", "gh_push")), pytest.raises(CallDeferred):
            await wrapped.invoke({"branch": "main"})
        [request] = await approvals.of_turn(queued.entry_id, ["c1"])
        assert CallPreview.from_json(request.preview) == shown
        assert request.mention is mention
