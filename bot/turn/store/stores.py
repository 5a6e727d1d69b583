"""The turn's stores, bundled: every store keyed by a thread or a turn (one per process),
and the part of them, with the shared audit and usage, that one turn's owner writes."""

from __future__ import annotations

from dataclasses import dataclass

from bot.state.audit import AuditLog
from bot.state.usage import UsageCounters
from bot.turn.store.agent_pane import AgentPaneThreads
from bot.turn.store.approvals import Approvals
from bot.turn.store.asides import ThreadAsides
from bot.turn.store.dead_letters import DeadLetters
from bot.turn.store.elicitations import Elicitations
from bot.turn.store.history import RedisHistory
from bot.turn.store.lease import ThreadLocks
from bot.turn.store.notices import Notices
from bot.turn.store.participation import ThreadParticipation
from bot.turn.store.queue import TurnQueue
from bot.turn.store.records import TurnRecords
from bot.turn.store.stops import StopRequests
from bot.turn.store.waiting_notes import WaitingNotes


@dataclass
class ThreadStores:
    """Every record keyed by a thread or a turn, on one client."""

    queue: TurnQueue
    locks: ThreadLocks
    records: TurnRecords
    dead_letters: DeadLetters
    notices: Notices
    history: RedisHistory
    participation: ThreadParticipation  # the threads the bot is in
    asides: ThreadAsides  # replies heard in them, not answered
    pane: AgentPaneThreads  # agent-pane threads: greeted, the channel in view
    stops: StopRequests
    elicitations: Elicitations  # questions MCP servers ask a person
    approvals: Approvals
    waiting_notes: WaitingNotes  # a thread told once that it waits for an approval


@dataclass
class TurnStores:
    """The Redis stores a turn's owner reads and writes, and nothing else."""

    records: TurnRecords
    queue: TurnQueue
    dead_letters: DeadLetters
    history: RedisHistory
    audit: AuditLog
    usage: UsageCounters
    notices: Notices
    approvals: Approvals

    @classmethod
    def of(cls, threads: ThreadStores, audit: AuditLog, usage: UsageCounters) -> TurnStores:
        return cls(
            records=threads.records,
            queue=threads.queue,
            dead_letters=threads.dead_letters,
            history=threads.history,
            audit=audit,
            usage=usage,
            notices=threads.notices,
            approvals=threads.approvals,
        )
