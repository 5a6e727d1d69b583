"""One model call's metrics and span (GenAI semantic conventions).

The span carries ``gen_ai.operation.name``, ``gen_ai.system``, ``gen_ai.request.model`` and
the request's sampling settings, then ``gen_ai.response.model``,
``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens`` and
``gen_ai.usage.output_tokens``; never the messages. Recording never raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

from opentelemetry.trace import INVALID_SPAN, Span, SpanKind

from bot.llm.pricing import Price, cost_of
from bot.llm.response import ModelResponse
from bot.observability import metrics
from bot.observability.tracing import fail, tracer


def has_content(chunk: dict[str, Any]) -> bool:
    """A streamed chunk that carries text or a tool call (not only a role or usage)."""
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and (delta.get("content") or delta.get("tool_calls")):
            return True
    return False


class ModelCallTelemetry:
    def __init__(self, model: str, request: dict[str, Any], price: Price | None) -> None:
        self.model = metrics.label(model)
        self.request = request
        self.price = price
        self.started = time.perf_counter()
        self.waiting_for_first_token = True
        self._span: Span = INVALID_SPAN
        self._recorded = False

    @contextlib.contextmanager
    def span(self) -> Iterator[None]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",  # older conventions' name, still widely read
            "gen_ai.provider.name": "openai",  # the OpenAI-compatible API
            "gen_ai.request.model": self.model,
        }
        for key, name in (
            ("max_tokens", "gen_ai.request.max_tokens"),
            ("temperature", "gen_ai.request.temperature"),
        ):
            if self.request.get(key) is not None:
                attributes[name] = self.request[key]
        with tracer().start_as_current_span(
            f"chat {self.model}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,  # the error's words may quote the request
            set_status_on_exception=False,
        ) as span:
            self._span = span
            try:
                yield
            except asyncio.CancelledError:
                self.failed("cancelled")
                raise
            except BaseException as exc:
                self.failed(type(exc).__name__)
                raise

    def first_token(self) -> None:
        self.waiting_for_first_token = False
        elapsed = time.perf_counter() - self.started
        metrics.safely(
            lambda: metrics.MODEL_FIRST_TOKEN_SECONDS.labels(model=self.model).observe(elapsed)
        )

    def failed(self, kind: str) -> None:
        if self._recorded:
            return
        self._recorded = True
        self._record(metrics.label(kind))
        fail(self._span, metrics.label(kind))

    def finished(self, response: ModelResponse) -> None:
        if self._recorded:
            return
        self._recorded = True
        self._record("ok")
        usage = response.usage
        cost = cost_of(usage, self.price)

        def record() -> None:
            metrics.MODEL_TOKENS.labels(model=self.model, kind="input").inc(usage.prompt_tokens)
            metrics.MODEL_TOKENS.labels(model=self.model, kind="output").inc(
                usage.completion_tokens
            )
            if cost:
                metrics.MODEL_COST.labels(model=self.model).inc(cost)

        metrics.safely(record)
        span = self._span
        if span.is_recording():
            span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
            if response.model:
                span.set_attribute("gen_ai.response.model", response.model)
            if response.finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
            if usage.estimated:
                span.set_attribute("slack_agent.usage.estimated", True)

    def _record(self, outcome: str) -> None:
        elapsed = time.perf_counter() - self.started

        def record() -> None:
            metrics.MODEL_CALLS.labels(model=self.model, outcome=outcome).inc()
            metrics.MODEL_SECONDS.labels(model=self.model).observe(elapsed)

        metrics.safely(record)
