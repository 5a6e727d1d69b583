"""At most ``approval.max_open_per_person`` undecided approval requests per person.

A request is opened first (bot/turn/store/approvals.py, in its thread's shard), then takes
a place among its person's open requests (bot/state/approval_quota.py, in the team's shard:
one atomic step, across threads and replicas). When there is no place, the places of
requests decided since are let go of and it asks once more; still none, and the request is
withdrawn before any card shows it, and the call is refused to the model with the reason.
A request a card shows already is never refused here (it was counted when it opened). A
sign-in request never takes a place: the cap counts approvals only (a call has at most one
sign-in open, and a person's sign-ins to one server wait on one connection).
"""

from __future__ import annotations

import logging

from bot.state.approval_quota import ApprovalQuota, Place
from bot.turn.store.approvals import ApprovalRequest, Approvals

log = logging.getLogger(__name__)


def over_cap(tool: str, user: str, open_now: int, most: int) -> str:
    """What the model is told of a call refused for want of a place (pure)."""
    waiting = f"{open_now} approval request{'s' if open_now != 1 else ''}"
    return (
        f"{tool} did not run and nobody was asked to approve it: <@{user}> already has "
        f"{waiting} waiting for a decision, the most allowed at once ({most}). Those must be "
        "decided or expire before another call that needs approval can be asked for."
    )


async def place_for(
    approvals: Approvals, quota: ApprovalQuota, request: ApprovalRequest, most: int
) -> Place:
    """A place for ``request`` among its person's open requests; refused: the request is
    withdrawn (no card will show it). A sign-in needs no place (and takes none)."""
    if request.sign_in:
        return Place(True, 0)
    place = await quota.take(request.team, request.user, request.id, request.deadline, most)
    if place.taken:
        return place
    holders = await quota.holders(request.team, request.user)
    still_open = await approvals.open_among(holders)
    decided = [rid for rid in holders if rid not in still_open]
    if decided:
        await quota.release(request.team, request.user, decided)
        place = await quota.take(request.team, request.user, request.id, request.deadline, most)
        if place.taken:
            return place
    if not await approvals.withdraw(request):
        # Decided meanwhile (nobody could see it: a forged click at most): it stays as
        # decided, and the turn goes on from the decision.
        log.warning("request %s was decided before it could be withdrawn", request.id)
        return Place(True, place.open)
    log.info(
        "refused a call of %s for %s: %d approval requests open (the most is %d)",
        request.tool,
        request.user,
        place.open,
        most,
    )
    return place
