"""The loop observer a turn runs with: tool call metrics and spans, from the loop's events
(the attempt's own span and counters: telemetry.py)."""

from __future__ import annotations

from opentelemetry.trace import Span, SpanKind

from bot.agent.events import AgentEvent, ToolFinished, ToolStarted
from bot.agent.result import CallOutcome
from bot.observability import metrics
from bot.observability.tracing import fail, tracer

# Calls whose tool name came from the model and names no tool it may use: the name is the
# model's text, so it never becomes a label.
NOT_A_TOOL = frozenset({"UnknownTool", "ToolNotAllowed"})
UNKNOWN_TOOL = "(unknown)"


def tool_label(name: str, error: str | None) -> str:
    return UNKNOWN_TOOL if error in NOT_A_TOOL else metrics.label(name)


class TurnTelemetry:
    """An observer for one turn (``fan_out`` it beside the surface's observer)."""

    def __init__(self) -> None:
        self._spans: dict[str, Span] = {}

    async def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ToolStarted):
            self._started(event)
        elif isinstance(event, ToolFinished):
            self._finished(event)

    def _started(self, event: ToolStarted) -> None:
        span = tracer().start_span(
            f"execute_tool {metrics.label(event.name)}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": metrics.label(event.name),
                "gen_ai.tool.call.id": event.call_id,
                "slack_agent.round": event.round,
            },
        )
        self._spans[event.call_id] = span

    def _finished(self, event: ToolFinished) -> None:
        if event.outcome is CallOutcome.DEFERRED:
            outcome = "deferred"  # it waits for a person; counted again when it runs
        else:
            outcome = "ok" if event.ok else metrics.label(event.error or "error")
        tool = tool_label(event.name, event.error)

        def record() -> None:
            metrics.TOOL_CALLS.labels(tool=tool, outcome=outcome).inc()
            metrics.TOOL_SECONDS.labels(tool=tool).observe(event.duration_ms / 1000)

        metrics.safely(record)
        span = self._spans.pop(event.call_id, None)
        if span is not None:
            if not event.ok and event.outcome is not CallOutcome.DEFERRED:
                fail(span, outcome)
            span.end()
