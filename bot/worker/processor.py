"""Working through one thread's queued turns: in order, one at a time, exactly once.

A worker that reads (or reclaims) an entry takes the thread's lock and then works through
the thread's pending list from its head, which keeps arrival order even when another worker
read a later entry first. A worker that cannot get the lock leaves its entry alone: the
lock's owner will reach it. After letting the lock go, the owner looks once more, so a turn
that arrived just then is never stranded.

Each turn: count the attempt (too many: dead-letter it and tell the person), run the agent
loop with a journal (so a crash resumes instead of repeating), store history, usage and
audit in one transaction, deliver the answer, then acknowledge and forget the entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot.agent.loop import LoopSettings, run_turn
from bot.agent.result import TurnResult
from bot.llm.client import ChatModel
from bot.llm.tokens import TokenEstimator
from bot.state.audit import AuditEntry
from bot.state.progress import ANSWERED
from bot.state.store import State
from bot.turn import ThreadKey, Turn
from bot.worker.responder import GAVE_UP, Responder
from tools.toolset import Toolset

log = logging.getLogger(__name__)

ToolsetFor = Callable[[Turn], Awaitable[Toolset]]
ARGUMENTS_IN_AUDIT = 500
STOP_POLL_S = 0.5  # how often running turns look for Stop requests from other processes


@dataclass
class Agent:
    """What running a turn needs besides state: the model, loop settings and tools."""

    model: ChatModel
    settings: LoopSettings
    toolset_for: ToolsetFor
    history_budget: int
    estimator: TokenEstimator


class TurnProcessor:
    def __init__(
        self,
        state: State,
        agent: Agent,
        responder: Responder,
        *,
        max_attempts: int,
        retry_delay_s: float = 1.0,
    ) -> None:
        self.state = state
        self.agent = agent
        self.responder = responder
        self.max_attempts = max_attempts
        self.retry_delay_s = retry_delay_s
        # Turns running in this process: their cancel event, their lock's "lost" event, and
        # when they started (a Stop pressed before that was for an earlier turn).
        self._running: dict[ThreadKey, tuple[asyncio.Event, asyncio.Event, float]] = {}
        self._watcher: asyncio.Task[None] | None = None

    def stop(self, thread: ThreadKey) -> bool:
        """Stop the turn running in ``thread`` in this process (a Stop button)."""
        running = self._running.get(thread)
        if running is None:
            return False
        running[0].set()
        return True

    async def handle(self, entry_id: str, turn: Turn | None) -> None:
        """Work on the thread of an entry this worker read or claimed."""
        if turn is None:
            await self._discard_unreadable(entry_id)
            return
        thread = turn.thread_key
        while True:
            lock = await self.state.locks.try_acquire(thread)
            if lock is None:
                return  # the owner works through this thread, this entry included
            try:
                async with lock.kept_alive() as lost:
                    await self._drain(thread, lost)
            finally:
                await lock.release()
            if not await self.state.queue.has_pending(thread):
                return

    async def _drain(self, thread: ThreadKey, lost: asyncio.Event) -> None:
        queue = self.state.queue
        while not lost.is_set():
            head = await queue.head(thread)
            if head is None:
                return
            entry = await queue.fetch(head)
            if entry is None:
                await queue.forget(thread, head)  # finished already; only the id was left
                continue
            await self._process(head, entry[1], thread, lost)

    async def _process(
        self, entry_id: str, turn: Turn | None, thread: ThreadKey, lost: asyncio.Event
    ) -> None:
        progress = await self.state.progress.begin_attempt(entry_id)
        if turn is None or progress.attempts > self.max_attempts:
            reason = "unreadable" if turn is None else f"failed {self.max_attempts} attempts"
            await self._dead_letter(entry_id, turn, thread, reason)
            return
        try:
            if progress.status == ANSWERED:
                text, result = progress.answer, None  # stored before a crash: deliver only
            else:
                result = await self._run(entry_id, turn, progress.saved, lost)
                if result is None:
                    return  # the lock was lost: the new owner carries on from the journal
                text = result.text
            await self.responder.deliver(turn, text, result)
            async with self.state.client.pipeline(transaction=True) as pipe:
                self.state.queue.finish(pipe, thread, entry_id)
                self.state.progress.forget(pipe, entry_id)
                await pipe.execute()
        except Exception:
            log.exception(
                "turn %s in %s failed (attempt %d of %d)",
                entry_id,
                thread,
                progress.attempts,
                self.max_attempts,
            )
            if progress.attempts >= self.max_attempts:
                await self._dead_letter(entry_id, turn, thread, "failed every attempt")
            else:
                await asyncio.sleep(self.retry_delay_s * progress.attempts)

    async def _run(
        self, entry_id: str, turn: Turn, saved: list[dict[str, Any]], lost: asyncio.Event
    ) -> TurnResult | None:
        state, agent = self.state, self.agent
        journal = state.progress.journal(entry_id)
        history = await state.history.for_model(
            turn.thread_key, agent.history_budget, agent.estimator
        )
        toolset = await agent.toolset_for(turn)
        async with self._cancel_event(turn.thread_key, lost) as cancel:
            result = await run_turn(
                agent.model,
                agent.settings,
                history,
                turn.text,
                toolset,
                observer=self.responder.observer(turn),
                cancel=cancel,
                journal=journal,
                resume=saved,
            )
        if lost.is_set():
            log.warning(
                "lost the lock of %s during turn %s; not storing it", turn.thread_key, entry_id
            )
            return None
        await self._commit(entry_id, turn, result)
        return result

    @contextlib.asynccontextmanager
    async def _cancel_event(
        self, thread: ThreadKey, lost: asyncio.Event
    ) -> AsyncIterator[asyncio.Event]:
        """One event that is set by a Stop request (in this process, or from any replica
        through Redis) or by losing the thread's lock."""
        cancel = asyncio.Event()
        self._running[thread] = (cancel, lost, time.time())
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch_running())
        try:
            yield cancel
        finally:
            self._running.pop(thread, None)

    async def _watch_running(self) -> None:
        """One task for every running turn of this process: every STOP_POLL_S, pass on a lost
        lock, and ask Redis in one round trip whether any of them was asked to stop."""
        while self._running:
            await asyncio.sleep(STOP_POLL_S)
            running = dict(self._running)
            for cancel, lost, _ in running.values():
                if lost.is_set():
                    cancel.set()
            try:
                started = {thread: at for thread, (_, _, at) in running.items()}
                requested = await self.state.stops.requested_since(started)
            except Exception:
                log.debug("could not check for stop requests", exc_info=True)
                continue
            for thread in requested:
                log.info("stop requested in %s", thread)
                running[thread][0].set()

    async def _commit(self, entry_id: str, turn: Turn, result: TurnResult) -> None:
        """History, the stored answer, usage and the audit entries, all at once."""
        state = self.state
        async with state.client.pipeline(transaction=True) as pipe:
            if result.new_messages:
                await state.history.append(turn.thread_key, result.new_messages, pipe)
            state.progress.mark_answered(pipe, entry_id, result.text)
            for execution in result.executions:
                state.audit.add_to(
                    pipe,
                    AuditEntry(
                        kind="tool",
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
                )
            state.usage.add_to(pipe, turn.team, turn.user, result.usage, result.cost)
            await pipe.execute()

    async def _dead_letter(
        self, entry_id: str, turn: Turn | None, thread: ThreadKey | None, reason: str
    ) -> None:
        log.error("dead-lettering turn %s: %s", entry_id, reason)
        if turn is not None:
            try:
                await self.responder.give_up(turn, GAVE_UP)
            except Exception:
                log.exception("could not tell the person that turn %s failed", entry_id)
        async with self.state.client.pipeline(transaction=True) as pipe:
            self.state.queue.dead_letter(pipe, turn, entry_id, reason)
            if thread is not None:
                self.state.queue.finish(pipe, thread, entry_id)
            else:
                pipe.xack(self.state.keys.turns, self.state.keys.workers, entry_id)
                pipe.xdel(self.state.keys.turns, entry_id)
            self.state.progress.forget(pipe, entry_id)
            await pipe.execute()

    async def _discard_unreadable(self, entry_id: str) -> None:
        await self._dead_letter(entry_id, None, None, "unreadable")
