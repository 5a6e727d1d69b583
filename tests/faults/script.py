"""The fake LLM's side of a fault scenario: every user message "m<k> <thread>" gets, after
the tool steps its plan asks for, exactly the answer "answer to m<k> <thread>".

The plan is a function of the question, so a scenario can make one turn long (a slow tool,
a slowly streamed answer) and leave the rest quick. Every model call is logged with its
monotonic time, which question it served and its round.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.llm_server import Reply, Request, caller, calls

QUESTION = re.compile(r"\bm(\d+) (t\d+)\b")
ANSWER = re.compile(r"answer to m(\d+) (t\d+)\b")


@dataclass(frozen=True, order=True)
class Question:
    """Message number ``k`` of the thread called ``thread`` ("t1", "t2", ...)."""

    thread: str
    k: int

    @property
    def text(self) -> str:
        return f"m{self.k} {self.thread}"

    @property
    def answer(self) -> str:
        return f"answer to m{self.k} {self.thread}"

    @property
    def step_prefix(self) -> str:
        return f"{self.thread}-m{self.k}-s"

    def step_name(self, number: int) -> str:
        """The name the ``number``-th (from 1) tool step of this question runs under."""
        return f"{self.step_prefix}{number}"


def questions_in(text: str) -> list[Question]:
    return [Question(thread, int(k)) for k, thread in QUESTION.findall(text)]


def answers_in(text: str) -> list[Question]:
    return [Question(thread, int(k)) for k, thread in ANSWER.findall(text)]


@dataclass(frozen=True)
class Step:
    """One tool call: ``tool`` (slow_step or sync_step from tests.fakes.fault_tools) taking
    ``seconds``."""

    seconds: float
    tool: str = "slow_step"


@dataclass(frozen=True)
class Plan:
    """How the model answers one question."""

    steps: tuple[Step, ...] = ()
    delay_s: float = 0.0  # before every reply
    tail: str = ""  # after the answer line (a paragraph long enough to stream)
    text_piece: int = 4  # characters per streamed chunk
    chunk_delay_s: float = 0.0  # between streamed chunks of the answer


@dataclass(frozen=True)
class ModelCall:
    at: float  # time.monotonic()
    question: Question | None
    round: int  # 1 for the first call of a turn
    answered: bool  # this call gave the answer (not a tool call)
    caller: str = ""  # the API key it came with (each replica has its own)


def _plain(question: Question) -> Plan:
    return Plan()


@dataclass
class Answers:
    """The fake LLM's ``otherwise``: called with each request, returns the reply."""

    plan: Callable[[Question], Plan] = _plain
    log: list[ModelCall] = field(default_factory=list)

    def __call__(self, request: Request) -> Reply:
        messages: list[dict[str, Any]] = request.get("messages") or []
        position, question = _current_question(messages)
        if question is None:
            self.log.append(ModelCall(time.monotonic(), None, 1, True, caller.get()))
            return Reply(text="I do not see a question.")
        rounds_done = sum(
            1
            for m in messages[position + 1 :]
            if m.get("role") == "assistant" and m.get("tool_calls")
        )
        plan = self.plan(question)
        if rounds_done < len(plan.steps):
            step = plan.steps[rounds_done]
            self.log.append(
                ModelCall(time.monotonic(), question, rounds_done + 1, False, caller.get())
            )
            arguments = {"name": question.step_name(rounds_done + 1), "seconds": step.seconds}
            call_id = f"call_{question.thread}_m{question.k}_s{rounds_done + 1}"
            return calls((step.tool, arguments, call_id), delay_s=plan.delay_s)
        self.log.append(ModelCall(time.monotonic(), question, rounds_done + 1, True, caller.get()))
        answer = question.answer + (f"\n\n{plan.tail}" if plan.tail else "")
        return Reply(
            text=answer,
            delay_s=plan.delay_s,
            text_piece=plan.text_piece,
            chunk_delay_s=plan.chunk_delay_s,
        )

    def calls_for(self, question: Question) -> list[ModelCall]:
        return [call for call in self.log if call.question == question]

    def last_call_at(self) -> float:
        return self.log[-1].at if self.log else 0.0


def _current_question(messages: list[dict[str, Any]]) -> tuple[int, Question | None]:
    """The last user message's question (a bot mention or other prefix may surround it)."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.get("role") == "user":
            found = questions_in(content_of(message))
            return position, (found[-1] if found else None)
    return -1, None


def content_of(message: dict[str, Any]) -> str:
    """A chat message's text, whether a string or a list of content parts."""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")
