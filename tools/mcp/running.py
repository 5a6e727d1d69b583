"""The tool calls running on one server connection, so that a request the server sends while
one runs (sampling, elicitation) is served for the right person.

Over streamable HTTP the SDK runs the server's request in the calling task's context, so the
context variables of ``tools.call_context`` name the call. Over stdio and SSE nothing ties
the request to a call: it belongs to the only call running, or to the person all the running
calls are for; otherwise nobody can be told apart, and it is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tools.call_context import CallScope, Requester, current_call, current_requester


@dataclass
class RunningCall:
    tool: str  # the name the model called (the server's name outside the agent loop)
    requester: Requester | None
    scope: CallScope | None
    asks: set[asyncio.Task[Any]] = field(default_factory=set)  # questions open for it
    sampled: int = 0  # sampling requests the server made during it


class RunningCalls:
    def __init__(self) -> None:
        self._calls: dict[int, RunningCall] = {}
        self._ids = itertools.count()
        # A call this connection did not register (a resource read during a tool call), one
        # per call scope (or person), so what is counted for it is counted once.
        self._unregistered: weakref.WeakKeyDictionary[object, RunningCall] = (
            weakref.WeakKeyDictionary()
        )

    @contextlib.contextmanager
    def running(self, tool: str) -> Iterator[RunningCall]:
        """Register a call made from this task; questions still open for it when it ends
        are withdrawn."""
        scope = current_call()
        call = RunningCall(scope.name if scope else tool, current_requester(), scope)
        key = next(self._ids)
        self._calls[key] = call
        try:
            yield call
        finally:
            del self._calls[key]
            for task in call.asks:
                task.cancel()

    def asking(self) -> RunningCall | None:
        """The call a server request that arrives now belongs to, if it can be told."""
        requester = current_requester()
        if requester is not None:
            scope = current_call()
            for call in self._calls.values():
                if call.scope is scope and call.requester is requester:
                    return call
            key: object = scope if scope is not None else requester
            found = self._unregistered.get(key)
            if found is None or found.requester is not requester:
                found = RunningCall(scope.name if scope else "", requester, scope)
                self._unregistered[key] = found
            return found
        calls = list(self._calls.values())
        if not calls:
            return None
        people = {(c.requester.team, c.requester.user) if c.requester else None for c in calls}
        if len(calls) == 1 or (len(people) == 1 and None not in people):
            return calls[0]
        return None
