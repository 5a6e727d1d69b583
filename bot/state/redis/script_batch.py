"""Calls of one Lua script made at about the same time, sent to Redis together.

A burst of Slack events is a burst of enqueues, each its own call: a connection taken from
the pool and given back, a write, a read, a retry wrapper and a timeout around each. Over a
burst of 200 mentions that was half of the ingress's CPU (py-spy), and the acks wait for
all of it. :class:`ScriptBatch` collects the calls made in one pass of the event loop and
sends them in one pipeline (no transaction): one connection, one write, one read.

Each call keeps its own outcome: its reply, or its own error reply. A lost connection
fails every call of the pipeline (after the client's own retries, which send the whole
pipeline again: each script must be safe to run twice, as the enqueue is by its dedup
keys). A script Redis does not know (after a restart or SCRIPT FLUSH) is loaded and the
calls it refused are sent again, one by one. A caller that stops waiting (its deadline)
leaves its call to run or not, as a single call would.

Only for a single Redis: a cluster's pipeline would split by slot anyway, so there each call
goes on its own. When replicas must confirm the writes (replication.py), one ``WAIT`` at the
end of the pipeline covers every call in it, and a shortfall fails them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from bot.state.redis.replication import Replication

Arguments = Sequence[str | int | float]

MAX_BATCH = 128  # calls per pipeline: a burst larger than this goes in several


@dataclass
class _Call:
    keys: Sequence[str]
    args: Arguments
    reply: asyncio.Future[Any]


class ScriptBatch:
    def __init__(
        self,
        script: AsyncScript,
        *,
        batched: bool = True,
        max_size: int = MAX_BATCH,
        replication: Replication | None = None,
    ):
        """``batched`` off: every call on its own (a cluster client)."""
        self.script = script
        self.replication = replication or Replication()
        self.batched = batched
        self.max_size = max_size
        self._waiting: list[_Call] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def __call__(self, keys: Sequence[str], args: Arguments) -> Any:
        """The script's reply for ``keys`` and ``args`` (its error reply raised)."""
        if not self.batched:
            return await self.replication.script(self.script, keys, args)
        loop = asyncio.get_running_loop()
        call = _Call(keys, args, loop.create_future())
        self._waiting.append(call)
        if len(self._waiting) == 1:  # the first of this pass: send them all after it
            loop.call_soon(self._send_waiting)
        return await call.reply

    def _send_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        for start in range(0, len(waiting), self.max_size):
            task = asyncio.create_task(self._send(waiting[start : start + self.max_size]))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, calls: list[_Call]) -> None:
        calls = [call for call in calls if not call.reply.done()]  # callers still waiting
        if not calls:
            return
        if len(calls) == 1:
            await _settle(calls[0], self._one(calls[0]))
            return

        def queue(pipe: Any) -> None:
            for call in calls:
                pipe.evalsha(self.script.sha, len(call.keys), *call.keys, *call.args)

        try:
            replies = await self.replication.pipeline(self.script.registered_client, queue)
        except BaseException as exc:  # unreachable, unconfirmed, or this task cancelled
            for call in calls:
                if not call.reply.done():
                    call.reply.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        unknown = []
        for call, reply in zip(calls, replies, strict=True):
            if isinstance(reply, NoScriptError):
                unknown.append(call)
            elif call.reply.done():
                continue  # its caller stopped waiting
            elif isinstance(reply, BaseException):
                call.reply.set_exception(reply)
            else:
                call.reply.set_result(reply)
        for call in unknown:  # the single call loads the script first
            await _settle(call, self._one(call))

    def _one(self, call: _Call) -> Awaitable[Any]:
        return self.replication.script(self.script, call.keys, call.args)


async def _settle(call: _Call, reply: Awaitable[Any]) -> None:
    """Await ``reply`` into ``call``'s future (unless its caller stopped waiting)."""
    try:
        result = await reply
    except BaseException as exc:  # an error reply, Redis unreachable, or this task cancelled
        if not call.reply.done():
            call.reply.set_exception(exc)
        if isinstance(exc, asyncio.CancelledError):
            raise
        return
    if not call.reply.done():
        call.reply.set_result(result)
