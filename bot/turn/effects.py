"""What a turn writes besides its own record (pure: builds the Redis commands that the
owner's fenced moves run in the same atomic step, runs nothing).

- settled: an audit entry per tool call, and the model usage and cost;
- delivered: the turn's messages in the thread's history, marked delivered, with who asked;
- done: the queue forgets the turn, its record keeps only its bare state;
- dead-lettered: the dead letter, the turn in history marked *not delivered* (the model
  sees that its answer never reached the person), the notice owed to the person (and what
  the turn left open in Slack to tidy), an audit entry, and the queue forgets it.
"""

from __future__ import annotations

from typing import Any

from bot.agent.journal import resume_from
from bot.agent.messages import user_message
from bot.agent.result import TurnResult
from bot.state.audit import AuditEntry, AuditKind
from bot.state.redis.commands import Commands
from bot.turn.model import QueuedTurn
from bot.turn.store.notices import Notice
from bot.turn.store.stores import TurnStores
from bot.turn.store.turn_record import TurnRecord

ARGUMENTS_IN_AUDIT = 500  # characters of a call's arguments kept in its audit entry


def settle_effects(stores: TurnStores, queued: QueuedTurn, result: TurnResult) -> Commands:
    """An audit entry for each tool call, and the turn's usage and cost."""
    turn, entry_id = queued.turn, queued.entry_id
    commands = Commands()
    shard = stores.queue.shards.of(turn.thread_key)
    for execution in result.executions:
        stores.audit.add_to(
            commands,
            AuditEntry(
                kind=AuditKind.TOOL,
                actor=turn.user,
                action=execution.name,
                outcome="ok" if execution.ok else str(execution.error),
                detail={
                    "arguments": execution.arguments[:ARGUMENTS_IN_AUDIT],
                    "duration_ms": round(execution.duration_ms, 1),
                    "channel": turn.channel,
                    "thread": turn.thread_ts,
                    "turn": entry_id,
                },
            ),
            shard,
        )
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
