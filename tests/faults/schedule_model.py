"""The scripted model of the schedules scenario (tests/faults/scenarios/schedules.py), on any
replica: a schedule's prompt gets ``answer to <tag>``; Alice's request to make one calls the
``schedule`` tool for a one-off ``one_off_s`` ahead, then says what it answered.

It notes which replica (by its model API key) made each request, and can hold one run's
turn mid-flight: :meth:`ScriptedModel.hold` delays the answer to the first request for a
tag that arrives at or after a moment, and sets :attr:`ScriptedModel.held` when that
request has arrived, so the replica running the turn can be killed while it waits.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from tests.fakes.llm_server import FakeLLM, Reply, Request, caller, calls, text, tool_results
from tests.faults.schedule_runs import answer_to, asked
from tests.faults.script import content_of

MAKE_IT = "please make me a scheduled ask"  # Alice's mention: the model calls the tool
MAKE_CALL = "make"  # the id of that tool call
SCHEDULE_TOOL = "schedule"


@dataclass(frozen=True)
class Held:
    """The request whose answer was held: its index, who made it (model API key) and when it
    arrived (``time.monotonic()``)."""

    index: int
    by: str
    at: float


class ScriptedModel:
    def __init__(self, llm: FakeLLM, *, tool_tag: str, prompt: str, one_off_s: float) -> None:
        self.llm = llm
        self.tool_tag = tool_tag  # the tag of the one-off made through the tool
        self.prompt = prompt
        self.one_off_s = one_off_s
        self.callers: dict[int, str] = {}  # request index -> the replica's model API key
        self.held = asyncio.Event()  # the held request has arrived
        self.held_request: Held | None = None
        self._hold_tag = ""
        self._hold_from = math.inf  # epoch seconds
        self._hold_s = 0.0

    def hold(self, tag: str, from_epoch: float, seconds: float) -> None:
        """Delay by ``seconds`` the answer to the first request for ``tag`` arriving at or
        after ``from_epoch``."""
        self._hold_tag, self._hold_from, self._hold_s = tag, from_epoch, seconds

    def __call__(self, request: Request) -> Reply:
        index = next(
            i for i in reversed(range(len(self.llm.requests))) if self.llm.requests[i] is request
        )
        self.callers[index] = caller.get()
        tag = asked(request)
        if tag is not None:
            if self._holds(tag):
                self.held_request = Held(index, caller.get(), time.monotonic())
                self.held.set()
                return text(answer_to(tag), delay_s=self._hold_s)
            return text(answer_to(tag))
        if MAKE_IT not in last_words(request):
            return text("I see no scheduled ask.")
        results = tool_results(request)
        if MAKE_CALL in results:
            return text(f"Made: {results[MAKE_CALL]}")
        at = datetime.fromtimestamp(time.time() + self.one_off_s, UTC).isoformat(timespec="seconds")
        arguments = {"prompt": f"{self.tool_tag}: {self.prompt}", "at": at}
        return calls((SCHEDULE_TOOL, arguments, MAKE_CALL))

    def _holds(self, tag: str) -> bool:
        return (
            tag == self._hold_tag and self.held_request is None and time.time() >= self._hold_from
        )

    def made_by(self, key: str, since: float) -> frozenset[int]:
        """The requests made with model API key ``key`` that arrived at or after ``since``
        (``time.monotonic()``)."""
        return frozenset(
            index
            for index, by in self.callers.items()
            if by == key and self.llm.arrived_at[index] >= since
        )


def last_words(request: Request) -> str:
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    return content_of(users[-1]) if users else ""
