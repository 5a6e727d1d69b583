"""The agentic loop: ask the model, run the tools it asks for, feed results back, repeat.

It knows nothing of Slack or Redis: it takes messages, a toolset, a model and an observer,
and returns a :class:`TurnResult`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from bot.agent.arguments import screened
from bot.agent.cancellation import Interrupted, unless
from bot.agent.events import Observer, RoundStarted, TextDelta, TurnFinished, notify
from bot.agent.execution import ExecutionSettings, execute_round, not_run
from bot.agent.journal import Journal, deferred_marker, resume_from
from bot.agent.messages import Message, assistant_message, repair, system_message, tool_message
from bot.agent.messages import user_message as make_user_message
from bot.agent.result import CallOutcome, StopReason, ToolExecution, TurnResult
from bot.llm.errors import LLMError
from bot.llm.model import ChatModel, TextCallback
from bot.llm.pricing import Price, cost_of
from bot.llm.response import ModelResponse, ToolCall
from bot.llm.usage import Usage
from bot.observability.context import ROUND, rounds_context
from tools.toolset import Toolset

log = logging.getLogger(__name__)

T = TypeVar("T")

EMPTY_ANSWER = "The model gave an empty answer. Please try rephrasing your question."
STOPPED = "Stopped before the answer was finished."
CUT_SHORT = "_(This answer reached the model's length limit. Ask me to continue.)_"


@dataclass(frozen=True)
class LoopSettings:
    system_prompt: str
    max_rounds: int = 6
    tool_timeout_s: float = 30.0
    tool_output_chars: int = 8000
    price: Price | None = None


class _Cancelled(Exception):
    pass


@dataclass(frozen=True)
class FinalAnswer:
    """The model answered without asking for tools: the turn ends with this response."""

    response: ModelResponse


@dataclass(frozen=True)
class NextRound:
    """Tool results were added: ask the model again."""


@dataclass(frozen=True)
class Stopped:
    """The turn was cancelled (a Stop) while a round ran."""


@dataclass(frozen=True)
class Parked:
    """Calls of the round wait for something outside the turn (a person's decision); the
    others ran and their results are saved. The turn resumes later from its journal."""

    deferred: list[ToolExecution]


# What one step of the loop leads to.
RoundOutcome = FinalAnswer | NextRound | Stopped | Parked


class _Turn:
    """The state of one running turn. Lives only as long as :func:`run_turn`."""

    def __init__(
        self,
        model: ChatModel,
        settings: LoopSettings,
        history: Sequence[Message],
        toolset: Toolset,
        observer: Observer | None,
        cancel: asyncio.Event | None,
        journal: Journal | None = None,
        context: str = "",
    ) -> None:
        self.context = context  # what the surface knows about this turn, for the model
        self.model = model
        self.settings = settings
        self.history = list(history)
        self.toolset = toolset
        self.observer = observer
        self.cancel = cancel
        self.journal = journal
        self.new: list[Message] = []
        self.executions: list[ToolExecution] = []
        self.usage = Usage()
        self.rounds = 0
        self.execution_settings = ExecutionSettings(
            default_timeout_s=settings.tool_timeout_s, output_chars=settings.tool_output_chars
        )

    def messages(self) -> list[Message]:
        prompt = self.settings.system_prompt
        if self.context:
            prompt = f"{prompt}\n\n{self.context}"
        return [system_message(prompt), *repair(self.history + self.new)]

    async def ask(self, tool_choice: str | None = None) -> ModelResponse:
        self.rounds += 1
        ROUND.set(self.rounds)  # on every log line of the round (bot/observability)
        await notify(self.observer, RoundStarted(self.rounds))
        tools = [tool.spec() for tool in await self.toolset.list_tools()]
        response = await self.until_cancelled(
            self.model.complete(
                self.messages(), tools, tool_choice=tool_choice, on_text=self._text_sink()
            )
        )
        self.usage += response.usage
        return response

    def _text_sink(self) -> TextCallback:
        round_number = self.rounds

        async def sink(text: str) -> None:
            await notify(self.observer, TextDelta(round_number, text))

        return sink

    async def until_cancelled(self, awaitable: Awaitable[T]) -> T:
        outcome = await unless(awaitable, self.cancel)
        if isinstance(outcome, Interrupted):
            raise _Cancelled
        return outcome

    async def record(self, message: Message) -> None:
        """Keep a message of the turn; with a journal, save it first. A journal that cannot
        save ends the turn with its error: tools never run unless their call was saved."""
        if self.journal is not None:
            await self.journal.record(message)
        self.new.append(message)

    async def _record_execution(self, execution: ToolExecution) -> None:
        if self.journal is None:
            return
        if execution.outcome is CallOutcome.DEFERRED:
            await self.journal.record(deferred_marker(execution.call_id))
        else:
            message = tool_message(execution.call_id, execution.output)
            await self.journal.record_call(execution, message)

    async def round(self) -> RoundOutcome:
        """Ask the model; run the tools it asks for."""
        response = await self.ask()
        if not response.tool_calls:
            return FinalAnswer(response)
        # Arguments the bot cannot read are kept as their refusal (bot/agent/arguments.py).
        calls = [screened(call) for call in response.tool_calls]
        await self.record(assistant_message(response.text, calls))
        return await self.run_calls(calls, {})

    async def run_calls(
        self, calls: Sequence[ToolCall], saved: dict[str, Message]
    ) -> NextRound | Stopped | Parked:
        """Run ``calls`` (the last round's, minus those with ``saved`` results) and append
        every result of the round in call order; a round with deferred calls parks."""
        assistant = self.new[-1]
        ran = await execute_round(
            calls,
            self.toolset,
            self.execution_settings,
            round_number=self.rounds,
            observer=self.observer,
            cancel=self.cancel,
            on_executed=self._record_execution,
        )
        deferred = [e for e in ran.executions if e.outcome is CallOutcome.DEFERRED]
        done = [e for e in ran.executions if e.outcome is not CallOutcome.DEFERRED]
        if ran.cancelled and deferred:
            # Stopped while calls waited: they never ran, and each call keeps a result.
            done += [
                not_run(ToolCall(e.call_id, e.name, e.arguments), e.round, CallOutcome.CANCELLED)
                for e in deferred
            ]
            deferred = []
        self.executions.extend(done)
        fresh = {e.call_id: tool_message(e.call_id, e.output) for e in done}
        for call in assistant.get("tool_calls") or ():
            call_id = str(call.get("id"))
            result = fresh.get(call_id) or saved.get(call_id)
            if result is not None:
                self.new.append(result)
        if ran.cancelled:
            return Stopped()
        return Parked(deferred) if deferred else NextRound()

    async def start(self, user_message: Message, resume: Sequence[Message]) -> RoundOutcome:
        """Begin, or pick up a saved turn: a round that was cut off runs its open calls."""
        if not resume:
            await self.record(user_message)
            return NextRound()
        resumed = resume_from(resume)
        self.new = resumed.messages
        self.rounds = resumed.rounds
        if not resumed.open_calls:
            return NextRound()
        saved = dict(resumed.saved_results)
        rerun = []
        for call in resumed.open_calls:
            if call.id in resumed.deferred or await self._may_rerun(call):
                rerun.append(call)
                continue
            execution = not_run(call, self.rounds, CallOutcome.INTERRUPTED)
            self.executions.append(execution)
            saved[call.id] = tool_message(call.id, execution.output)
            await self._record_execution(execution)
        return await self.run_calls(rerun, saved)

    async def _may_rerun(self, call: ToolCall) -> bool:
        """A call that was running when its worker died runs again at most once, and only
        when its tool is idempotent."""
        try:
            tool = await self.toolset.get_tool(call.name)
        except Exception:
            return True  # running it again gives the model the refusal as its result
        if not tool.idempotent:
            return False
        if self.journal is None:
            return True  # nothing keeps count: the caller resumes at most once
        return await self.journal.claim_rerun(call.id)

    def result(self, text: str, reason: StopReason, detail: str | None = None) -> TurnResult:
        return TurnResult(
            text=text,
            stop_reason=reason,
            rounds=self.rounds,
            executions=list(self.executions),
            new_messages=list(self.new),
            usage=self.usage,
            cost=cost_of(self.usage, self.settings.price),
            error_detail=detail,
        )

    async def run(self, user_message: Message, resume: Sequence[Message]) -> TurnResult:
        try:
            outcome = await self.start(user_message, resume)
            while isinstance(outcome, NextRound) and self.rounds < self.settings.max_rounds:
                outcome = await self.round()
            if isinstance(outcome, Stopped):
                return self.result(STOPPED, StopReason.CANCELLED)
            if isinstance(outcome, Parked):
                return replace(self.result("", StopReason.PARKED), deferred=outcome.deferred)
            if isinstance(outcome, FinalAnswer):
                return self.answered(outcome.response, StopReason.ANSWERED)
            # Round limit: one last call that may not use tools, so the turn ends in an answer.
            final = await self.ask(tool_choice="none")
            return self.answered(final, StopReason.ROUND_LIMIT)
        except _Cancelled:
            return self.result(STOPPED, StopReason.CANCELLED)
        except LLMError as exc:
            log.warning("model call failed (%s): %s", exc.kind, exc)
            return self.result(exc.user_message, StopReason.FAILED, str(exc))

    def answered(self, response: ModelResponse, reason: StopReason) -> TurnResult:
        if not response.text.strip():
            return self.result(EMPTY_ANSWER, reason)
        self.new.append(assistant_message(response.text))  # stored with the turn, not journaled
        if response.finish_reason == "length":
            # The model stopped at its token limit: say so rather than end mid-sentence silently.
            log.warning("the model's answer hit its token limit (llm.max_tokens)")
            return self.result(response.text.rstrip() + "\n\n" + CUT_SHORT, reason)
        return self.result(response.text, reason)


async def run_turn(
    model: ChatModel,
    settings: LoopSettings,
    history: Sequence[Message],
    user_message: str | Message,
    toolset: Toolset,
    *,
    observer: Observer | None = None,
    cancel: asyncio.Event | None = None,
    journal: Journal | None = None,
    resume: Sequence[Message] = (),
    context: str = "",
) -> TurnResult:
    """Run one turn: ``history`` is what came before, ``user_message`` the new message.

    ``result.new_messages`` (the user message, each assistant message with its tool calls and
    their results, and the answer) is what to append to the stored history. Setting
    ``cancel`` stops the turn: running tools are cancelled and the result says so.

    With a ``journal``, each message is saved the moment it is final. ``resume`` takes what a
    journal saved for this turn before a crash: the turn continues from there, running only
    the calls whose results were not saved.
    """
    first = make_user_message(user_message) if isinstance(user_message, str) else user_message
    turn = _Turn(model, settings, history, toolset, observer, cancel, journal, context)
    with rounds_context():
        result = await turn.run(first, resume)
    await notify(observer, TurnFinished(result))
    return result
