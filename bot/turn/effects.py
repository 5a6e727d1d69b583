"""What a turn writes besides its own record (pure: builds the Redis commands that the
owner's fenced steps run in the same atomic step, runs nothing).

- a tool call's result journaled: the call's audit entry, in the step that saves the result
  (so a call that ran is audited whichever attempt settles the turn, and once); a call cut
  off by a crash and claimed for a run again: an entry for the run cut off, in the claim;
- settled (or parked): the model usage and cost, and an entry for each call whose result is
  saved only now, with the turn (one a Stop cut off: it was never journaled);
- delivered: the turn's messages in the thread's history, marked delivered, with who asked;
- done: the queue forgets the turn, its record keeps only its bare state;
- dead-lettered: the dead letter, the turn in history marked *not delivered* (the model
  sees that its answer never reached the person), the notice owed to the person (and what
  the turn left open in Slack to tidy), an audit entry, and the queue forgets it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from bot.agent.journal import resume_from
from bot.agent.messages import user_message
from bot.agent.result import ToolExecution, TurnResult
from bot.state.audit import AuditEntry, AuditKind
from bot.state.redis.commands import Commands
from bot.turn.model import QueuedTurn
from bot.turn.store.notices import Notice
from bot.turn.store.stores import TurnStores
from bot.turn.store.turn_record import TurnRecord

ARGUMENTS_IN_AUDIT = 500  # characters of a call's arguments kept in its audit entry
CALL_ID_IN_AUDIT = 100  # ... and of its id (the model's)


def call_entry(queued: QueuedTurn, execution: ToolExecution) -> AuditEntry:
    """The audit entry of one tool call of the turn."""
    turn = queued.turn
    return AuditEntry(
        kind=AuditKind.TOOL,
        actor=turn.user,
        action=execution.name,
        outcome="ok" if execution.ok else str(execution.error),
        detail={
            "arguments": execution.arguments[:ARGUMENTS_IN_AUDIT],
            "duration_ms": round(execution.duration_ms, 1),
            "channel": turn.channel,
            "thread": turn.thread_ts,
            "turn": queued.entry_id,
            "call": execution.call_id[:CALL_ID_IN_AUDIT],
        },
    )


def call_effects(stores: TurnStores, queued: QueuedTurn, execution: ToolExecution) -> Commands:
    """The call's audit entry, for the fenced step that journals its result (or, for a run
    cut off by a crash, the step that claims the call for a run again)."""
    commands = Commands()
    shard = stores.queue.shards.of(queued.turn.thread_key)
    stores.audit.add_to(commands, call_entry(queued, execution), shard)
    return commands


def settle_effects(
    stores: TurnStores,
    queued: QueuedTurn,
    result: TurnResult,
    audited: Collection[ToolExecution],
) -> Commands:
    """The turn's usage and cost; and an audit entry for each call of this attempt not in
    ``audited`` (the calls whose entries went with their journaled results): the calls a
    Stop cut off, whose results are saved only now."""
    turn = queued.turn
    commands = Commands()
    shard = stores.queue.shards.of(turn.thread_key)
    for execution in result.executions:
        if execution not in audited:
            stores.audit.add_to(commands, call_entry(queued, execution), shard)
    stores.usage.add_to(commands, shard, turn.team, turn.user, result.usage, result.cost)
    return commands


def delivered_effects(
    stores: TurnStores, queued: QueuedTurn, messages: list[dict[str, Any]]
) -> Commands:
    """The turn in its thread's history, as the person saw it; and, in the same step, the
    queue forgets it (:func:`done_effects`)."""
    turn, entry_id = queued.turn, queued.entry_id
    commands = Commands()
    stores.history.append_to(
        commands, turn.thread_key, messages, turn=entry_id, delivered=True, user=turn.user
    )
    _forget(commands, stores, queued)
    return commands


def done_effects(stores: TurnStores, queued: QueuedTurn) -> Commands:
    """The queue forgets the turn; its record keeps only its state."""
    commands = Commands()
    _forget(commands, stores, queued)
    return commands


def dead_letter_effects(
    stores: TurnStores,
    queued: QueuedTurn,
    record: TurnRecord,
    delivery: dict[str, Any],
    reason: str,
    notice: str,
) -> Commands:
    """Give the turn up: the dead letter, history marked not delivered, the notice (``""``:
    nothing to say, only what the turn left open in Slack to tidy), an audit entry."""
    turn, entry_id = queued.turn, queued.entry_id
    commands = Commands()
    stores.dead_letters.add_to(commands, queued, reason)
    messages = record.messages or resume_from(record.journal).messages
    stores.history.append_to(
        commands,
        turn.thread_key,
        messages or [user_message(turn.text)],
        turn=entry_id,
        delivered=False,
        user=turn.user,
    )
    if notice or delivery:
        stores.notices.add_to(
            commands,
            Notice(
                id=entry_id,
                team=turn.team,
                channel=turn.channel,
                thread_ts=turn.thread_ts,
                message_ts=turn.message_ts,
                text=notice,
                delivery=delivery,
            ),
        )
    stores.audit.add_to(
        commands,
        AuditEntry(
            kind=AuditKind.TURN,
            actor=turn.user,
            action="dead_letter",
            outcome=reason,
            detail={"channel": turn.channel, "thread": turn.thread_ts, "turn": entry_id},
        ),
        stores.queue.shards.of(turn.thread_key),
    )
    _forget(commands, stores, queued)
    return commands


def _forget(commands: Commands, stores: TurnStores, queued: QueuedTurn) -> None:
    stores.queue.finish(commands, queued.turn.thread_key, queued.entry_id)
    stores.records.finish_commands(commands, queued.entry_id)
