"""Run one round of tool calls: concurrently, each with a timeout, every failure a result."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.agent.arguments import ArgumentsRefused, parse_arguments
from bot.agent.cancellation import Interrupted, unless
from bot.agent.events import Observer, ToolFinished, ToolProgress, ToolStarted, notify
from bot.agent.result import CallOutcome, ToolExecution
from bot.agent.truncation import truncate_middle
from bot.llm.response import ToolCall
from bot.observability.context import TOOL
from tools.call_context import CallScope, ProgressReport, calling
from tools.errors import CallDeferred, NotApproved, ToolError
from tools.output import error_output, render_output
from tools.toolset import Toolset

log = logging.getLogger(__name__)

# Called with each execution as soon as its tool finishes (to save it before the round ends).
OnExecuted = Callable[[ToolExecution], Awaitable[None]]

PREVIEW_CHARS = 160
TOOL_NAME_IN_LOGS = 64  # the name comes from the model: bounded on log lines


@dataclass(frozen=True)
class ExecutionSettings:
    default_timeout_s: float = 30.0
    output_chars: int = 8000


@dataclass(frozen=True)
class RoundResult:
    """One round's executions, in the model's call order; ``cancelled`` when the turn was
    stopped while it ran (the calls cut off are among the executions, as cancelled)."""

    executions: list[ToolExecution]
    cancelled: bool = False


class _Failure(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


async def execute_round(
    calls: Sequence[ToolCall],
    toolset: Toolset,
    settings: ExecutionSettings,
    *,
    round_number: int,
    observer: Observer | None = None,
    cancel: asyncio.Event | None = None,
    on_executed: OnExecuted | None = None,
) -> RoundResult:
    """Run all ``calls`` at once; executions come back in the model's call order.

    When ``cancel`` is set while tools run, the running ones are cancelled (their outcome
    :attr:`CallOutcome.CANCELLED`, their result the error kind "Cancelled"); the ones that
    finished keep their result. If this coroutine itself is cancelled, the running tools
    are cancelled with it.
    """
    tasks = [
        asyncio.ensure_future(
            execute_call(call, toolset, settings, round_number, observer, on_executed)
        )
        for call in calls
    ]
    outcome = await unless(asyncio.gather(*tasks), cancel)
    if not isinstance(outcome, Interrupted):
        return RoundResult(list(outcome))
    executions = []
    for call, task in zip(calls, tasks, strict=True):
        if task.done() and not task.cancelled() and task.exception() is None:
            executions.append(task.result())
            continue
        execution = not_run(call, round_number, CallOutcome.CANCELLED)
        await notify(
            observer,
            ToolFinished(
                round_number, call.id, call.name, CallOutcome.CANCELLED, 0.0, "stopped", CANCELLED
            ),
        )
        executions.append(execution)
    return RoundResult(executions, cancelled=True)


CANCELLED = "Cancelled"  # the error kind the model reads for a call the turn's stop cut off
INTERRUPTED = "Interrupted"  # ... and for one its worker's death cut off
NOT_RUN = {
    CallOutcome.CANCELLED: (CANCELLED, "The turn was stopped before this tool finished."),
    CallOutcome.INTERRUPTED: (
        INTERRUPTED,
        "{name} was interrupted when the worker running it stopped; whether it took effect "
        "is unknown. Check before calling it again.",
    ),
}


def not_run(call: ToolCall, round_number: int, outcome: CallOutcome) -> ToolExecution:
    """The result of a call that did not run to its end: stopped by the turn's stop
    (cancelled), or cut off by its worker's death and not run again (interrupted)."""
    kind, message = NOT_RUN[outcome]
    return ToolExecution(
        call_id=call.id,
        name=call.name,
        arguments=call.arguments,
        outcome=outcome,
        output=error_output(kind, message.format(name=call.name)),
        duration_ms=0.0,
        round=round_number,
        error=kind,
    )


async def execute_call(
    call: ToolCall,
    toolset: Toolset,
    settings: ExecutionSettings,
    round_number: int,
    observer: Observer | None = None,
    on_executed: OnExecuted | None = None,
) -> ToolExecution:
    token = TOOL.set(call.name[:TOOL_NAME_IN_LOGS])  # on every log line of the call
    try:
        return await _execute_call(call, toolset, settings, round_number, observer, on_executed)
    finally:
        TOOL.reset(token)


async def _execute_call(
    call: ToolCall,
    toolset: Toolset,
    settings: ExecutionSettings,
    round_number: int,
    observer: Observer | None,
    on_executed: OnExecuted | None,
) -> ToolExecution:
    await notify(observer, ToolStarted(round_number, call.id, call.name, call.arguments))
    log.debug("calling %s with %s", call.name, call.arguments)  # arguments: DEBUG only
    started = time.perf_counter()

    async def report(progress: float, total: float | None, message: str | None) -> None:
        event = ToolProgress(round_number, call.id, call.name, progress, total, message)
        await notify(observer, event)

    try:
        output = await _run(call, toolset, settings, report)
        outcome, kind = CallOutcome.OK, None
    except CallDeferred as deferred:
        output, outcome, kind = str(deferred), CallOutcome.DEFERRED, None
    except _Failure as failure:
        output, outcome, kind = (
            error_output(failure.kind, str(failure)),
            CallOutcome.FAILED,
            failure.kind,
        )
    duration_ms = (time.perf_counter() - started) * 1000
    output = truncate_middle(output, settings.output_chars)
    execution = ToolExecution(
        call_id=call.id,
        name=call.name,
        arguments=call.arguments,
        outcome=outcome,
        output=output,
        duration_ms=duration_ms,
        round=round_number,
        error=kind,
    )
    await notify(
        observer,
        ToolFinished(
            round_number,
            call.id,
            call.name,
            outcome,
            duration_ms,
            _preview(output if execution.ok else _error_message(output)),
            kind,
        ),
    )
    if on_executed is not None:
        await on_executed(execution)  # a result that cannot be saved ends the turn
    return execution


async def _run(
    call: ToolCall,
    toolset: Toolset,
    settings: ExecutionSettings,
    report: ProgressReport,
) -> str:
    try:
        tool = await toolset.get_tool(call.name)
    except ToolError as exc:
        raise _Failure(getattr(exc, "kind", "ToolError"), str(exc)) from None
    except Exception as exc:  # the policy could not be asked: refuse rather than run
        log.warning("looking up tool %s failed", call.name, exc_info=True)
        raise _Failure("ToolUnavailable", f"{call.name} cannot be checked right now.") from exc

    arguments = _parse_arguments(call)

    if tool.confirm:
        # Still marked: no approval wrapper (tools/approval.py) stood in front of it.
        refused = NotApproved.nobody_to_ask(tool.name)
        raise _Failure(refused.kind, str(refused))

    timeout_s = tool.timeout_s or settings.default_timeout_s
    try:
        async with asyncio.timeout(timeout_s) as deadline:
            # The tool may report progress, and stops the clock while it asks a person.
            with calling(CallScope(call.id, call.name, report, deadline)):
                value = await tool.invoke(arguments)
    except TimeoutError:
        if deadline.expired():
            raise _Failure(
                "TimeoutError", f"{tool.name} took longer than {timeout_s:g} s"
            ) from None
        raise _Failure("TimeoutError", f"{tool.name} timed out inside the tool") from None
    except ToolError as exc:
        raise _Failure(getattr(exc, "kind", "ToolError"), str(exc)) from None
    except CallDeferred:
        raise
    except Exception as exc:
        # The traceback may quote the arguments: only at DEBUG.
        log.warning("tool %s raised %s", tool.name, type(exc).__name__)
        log.debug("tool %s raised", tool.name, exc_info=True)
        raise _Failure(type(exc).__name__, str(exc) or f"{tool.name} failed") from None
    return render_output(value)


def _parse_arguments(call: ToolCall) -> dict[str, Any]:
    try:
        return parse_arguments(call)
    except ArgumentsRefused as refused:
        raise _Failure(refused.kind, str(refused)) from None


def _error_message(output: str) -> str:
    try:
        return str(json.loads(output).get("message", output))
    except (ValueError, AttributeError):
        return output


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
