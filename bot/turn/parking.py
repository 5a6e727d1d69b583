"""A turn waiting for a person: what parking it writes, and whether it may go on.

Parking is one fenced move, ``running → awaiting_approval``: the model usage so far is
counted (as when a turn settles; what the resumed turn does is counted when it settles; the
calls that ran were audited as their results were journaled), the waiting calls are kept in
the record, and the attempt count starts again (waiting is not failing). Nothing is held
while it waits.

A worker that meets the parked turn (its entry comes round again, or a decision or an
expiry woke it) lets it go on only when one of its requests is no longer open (decided, or
expired: by the workers' look at the deadlines, audited there, or now, audited in the
move) or no longer kept; otherwise it leaves it parked at once. What a call waits on is its
newest request (a sign-in opened after its approval was decided: the sign-in), and an
expiry is audited by the request's kind (an approval's, or a sign-in's as a connection).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Collection

from bot.agent.result import ToolExecution, TurnResult
from bot.state.redis.commands import Commands
from bot.turn import effects
from bot.turn.fence import TurnFence
from bot.turn.model import QueuedTurn
from bot.turn.ports import TurnView
from bot.turn.retry import GaveUp, SlackRetries, Taken
from bot.turn.states import TurnState
from bot.turn.store.approvals import ApprovalRequest, audited, decided_any, expired_action
from bot.turn.store.stores import TurnStores
from bot.turn.store.turn_record import TurnRecord

log = logging.getLogger(__name__)


async def park(
    stores: TurnStores,
    queued: QueuedTurn,
    result: TurnResult,
    view: TurnView,
    retries: SlackRetries,
    fence: TurnFence,
    audited: Collection[ToolExecution],
) -> Taken | GaveUp:
    """Close what the turn shows so far and show what it waits for (retried like a
    delivery); then park it. GaveUp: Slack would not show it (the owner gives the turn up).
    ``audited``: the calls audited with their journaled results (the others are audited
    here, as at settle)."""
    entry_id = queued.entry_id
    waiting = [call.call_id for call in result.deferred]
    requests = await stores.approvals.of_turn(entry_id, waiting)
    shown = await retries.until_taken(lambda: view.park(requests), time.time(), "the card")
    if isinstance(shown, GaveUp):
        return shown
    commands = effects.settle_effects(stores, queued, result, audited)
    await fence.move(
        TurnState.AWAITING_APPROVAL,
        {"parked": json.dumps(waiting), "attempts": "0"},
        commands,
    )
    log.info(
        "turn %s in %s waits for %d approval(s)", entry_id, queued.turn.thread_key, len(waiting)
    )
    return shown


async def unpark(
    stores: TurnStores, queued: QueuedTurn, record: TurnRecord, fence: TurnFence
) -> bool:
    """Move a parked turn back to running when a person decided (or a request expired);
    False when everything it waits for is still open."""
    turn = queued.turn
    requests = await stores.approvals.of_turn(queued.entry_id, record.parked)
    expired = set(await stores.approvals.expire_due(requests))
    if not expired and not decided_any(requests) and not gone(requests, record.parked):
        return False
    commands = Commands()
    for request in requests:
        if request.id in expired:
            stores.audit.add_to(
                commands,
                audited(request, expired_action(request), "expired"),
                stores.queue.shards.of(turn.thread_key),
            )
    await fence.move(TurnState.RUNNING, {"parked": ""}, commands)
    return True


async def still_waiting(stores: TurnStores, entry_id: str) -> bool:
    """A look before any owner is made, for a parked turn: nothing it waits for was decided
    or is due to expire (so no attempt is begun, nothing is written)."""
    record = await stores.records.read(entry_id)
    if record is None:
        return False
    requests = await stores.approvals.of_turn(entry_id, record.parked)
    if gone(requests, record.parked):
        return False
    return all(r.open and not r.due for r in requests) and bool(requests)


def gone(requests: list[ApprovalRequest], parked: list[str]) -> bool:
    """Whether a request the turn waits for is no longer kept (past its deadline by
    ``AFTER_DEADLINE_S`` while no worker looked): the turn goes on, and its approver
    refuses that call (pure)."""
    return len({r.call_id for r in requests}) < len(set(parked))
