"""What a tool call may know while it runs, without a parameter for it: who it runs for,
how to ask them something, and how to report how far it is.

Two context variables, each set around one tool invocation, so they are seen by the tool
and by everything it awaits (an MCP call reads them to ask the person, to serve sampling
for them, and to report progress):

- the *requester*, set by the surface that runs the turn: :func:`for_requester` wraps a
  toolset so that each tool it hands out runs with it (the Slack worker's ``toolset_for``
  and the console do this);
- the *call*, set by the agent loop for each call (``bot/agent/execution.py``): its id and
  name, where its progress goes, and its deadline, which stops while a person is asked.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from tools.definition import Tool
from tools.questions import Asker
from tools.toolset import Toolset

ProgressReport = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(frozen=True)
class Requester:
    """The person a tool runs for, and where."""

    team: str
    user: str
    channel: str | None = None
    thread: str | None = None
    asker: Asker | None = None  # how to ask them a question; None: nobody can be asked
    # Their own workspace as the surface named it ("": none; see permissions.policy.Person).
    user_team: str = ""


class CallScope:
    """One running tool call."""

    def __init__(
        self,
        call_id: str,
        name: str,
        report: ProgressReport | None = None,
        deadline: asyncio.Timeout | None = None,
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.report = report
        self.deadline = deadline
        self._holds = 0
        self._left: float | None = None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.report is not None:
            await self.report(progress, total, message)

    @contextlib.contextmanager
    def clock_stopped(self) -> Iterator[None]:
        """While a person is being asked, the call's timeout does not run."""
        deadline = self.deadline
        if deadline is None or deadline.expired():
            yield
            return
        loop = asyncio.get_running_loop()
        if self._holds == 0:
            when = deadline.when()
            self._left = None if when is None else max(when - loop.time(), 0.0)
            _reschedule(deadline, None)
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if self._holds == 0 and not deadline.expired():
                _reschedule(deadline, None if self._left is None else loop.time() + self._left)


def _reschedule(deadline: asyncio.Timeout, when: float | None) -> None:
    """Move the deadline, unless its call is over already."""
    with contextlib.suppress(RuntimeError):  # "Cannot change state of finished Timeout"
        deadline.reschedule(when)


_requester: ContextVar[Requester | None] = ContextVar("tool_requester", default=None)
_call: ContextVar[CallScope | None] = ContextVar("tool_call", default=None)


def current_requester() -> Requester | None:
    return _requester.get()


def current_call() -> CallScope | None:
    return _call.get()


@contextlib.contextmanager
def calling(scope: CallScope) -> Iterator[None]:
    """Run the code inside as the tool call ``scope``."""
    token = _call.set(scope)
    try:
        yield
    finally:
        _call.reset(token)


def for_requester(inner: Toolset, requester: Requester) -> Toolset:
    """``inner``, whose tools run for ``requester``."""
    return _RequesterToolset(inner, requester)


class _RequesterToolset:
    def __init__(self, inner: Toolset, requester: Requester) -> None:
        self.inner = inner
        self.requester = requester

    async def list_tools(self) -> Sequence[Tool]:
        return await self.inner.list_tools()

    async def get_tool(self, name: str) -> Tool:
        tool = await self.inner.get_tool(name)
        requester, invoke = self.requester, tool.invoke

        async def invoke_for(arguments: dict[str, Any]) -> Any:
            token = _requester.set(requester)
            try:
                return await invoke(arguments)
            finally:
                _requester.reset(token)

        return tool.replace(invoke=invoke_for)
