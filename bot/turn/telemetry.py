"""What a turn's owner reports: one span per attempt (the child of the ingress span, so the
turn's trace crosses the queue), a span per delivery attempt, and each turn counted once by
how it ended. Nothing here can fail a turn."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from opentelemetry.trace import Span, SpanKind

from bot.agent.result import StopReason, TurnResult
from bot.observability import metrics
from bot.observability.tracing import context_from, fail, tracer
from bot.turn.model import QueuedTurn


@contextlib.contextmanager
def attempt_span(queued: QueuedTurn) -> Iterator[Span]:
    """The span of one attempt at the turn."""
    turn = queued.turn
    with tracer().start_as_current_span(
        "slack_agent.turn",
        context=context_from(turn.traceparent),
        kind=SpanKind.CONSUMER,
        attributes={
            "slack_agent.turn.id": queued.entry_id,
            "slack_agent.turn.kind": turn.kind.value,
            "slack.team_id": turn.team,
            "slack.channel_id": turn.channel,
            "slack.thread_ts": turn.thread_ts,
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield span


@contextlib.contextmanager
def delivery_span() -> Iterator[None]:
    """A span around one attempt to deliver the answer to Slack."""
    with tracer().start_as_current_span(
        "slack.deliver", record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield
        except BaseException as exc:
            fail(span, type(exc).__name__)
            raise


def settled(result: TurnResult) -> None:
    """Count a settled turn's rounds (its outcome is counted once its fate is known)."""
    metrics.safely(lambda: metrics.TURN_ROUNDS.observe(result.rounds))


def delivered(reason: StopReason) -> None:
    """Count a delivered turn under how it ended; a turn given up counts as dead_lettered
    instead, so each turn is counted once."""
    metrics.safely(lambda: metrics.TURNS.labels(outcome=reason.value).inc())


def dead_lettered(kind: str) -> None:
    def record() -> None:
        metrics.DEAD_LETTERS.labels(reason=kind).inc()
        metrics.TURNS.labels(outcome="dead_lettered").inc()

    metrics.safely(record)


def delivery_retried() -> None:
    metrics.safely(metrics.DELIVERY_RETRIES.inc)
