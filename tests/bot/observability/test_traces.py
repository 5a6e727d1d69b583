"""Traces with the SDK's in-memory exporter: one trace per turn, from the ingress that
queued it to the worker that answered it, with GenAI attributes on model calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from bot.llm.client import OpenAIChatModel
from bot.llm.errors import LLMError
from bot.observability import tracing
from bot.observability.span_export import RedactingSpanExporter
from bot.process.run import assemble
from bot.process.services import build_services
from bot.turn.model import Turn
from tests.fakes.llm_server import FakeLLM, calls, error, text
from tests.fakes.slack_harness import SlackHarness, mention
from tests.waiting import until


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_one_turn_is_one_trace_from_the_ingress_process_to_the_worker_process(
    slack_app: SlackHarness, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    # The ingress side: the real HTTP app, with no worker of its own.
    await slack_app.start(with_worker=False)
    slack_app.llm.add(calls(("calculate", {"expression": "6*7"}, "c1")), text("It is 42."))
    await slack_app.post(slack_app.envelope(mention("what is 6*7?", "140.000001")))
    [accept] = named(spans.get_finished_spans(), "slack_agent.accept")
    assert accept.kind is SpanKind.PRODUCER and accept.parent is None  # the trace's root

    # What crosses the queue: the turn's JSON in the Redis stream carries the traceparent.
    assert slack_app.services is not None
    state = slack_app.services.state
    [(_, fields)] = await state.client.xrange(state.keys.turns(0))
    queued = Turn.from_json(fields["turn"])
    trace_hex = f"{accept.context.trace_id:032x}"
    assert queued.traceparent.startswith(f"00-{trace_hex}-{accept.context.span_id:016x}-")

    # The worker side: a service built apart from the ingress, sharing only Redis (as
    # `slack-agent worker` would be).
    worker_services = build_services(tmp_path / f"agent-{id(slack_app)}.yaml")
    worker_process = assemble(worker_services, http=False)
    worker_process.worker.block_ms = 200
    stop = asyncio.Event()
    task = asyncio.create_task(worker_process.worker.run(stop))
    try:
        await until(lambda: bool(named(spans.get_finished_spans(), "slack_agent.turn")))
        await until(lambda: not worker_process.worker.active)
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
        await worker_process.slack.later.close()
        await worker_services.aclose()
    [answer] = slack_app.slack.thread("C0CHAN", "140.000001")
    assert answer.text == "It is 42."

    finished = spans.get_finished_spans()
    [turn] = named(finished, "slack_agent.turn")
    # The worker's turn span is the child of the ingress span, through the queue.
    assert turn.context.trace_id == accept.context.trace_id
    assert turn.parent is not None and turn.parent.is_remote
    assert parent_id(turn) == accept.context.span_id
    assert turn.kind is SpanKind.CONSUMER
    assert turn.attributes is not None and turn.attributes["slack_agent.turn.id"]

    chats = named(finished, "chat fake-model")
    [tool] = named(finished, "execute_tool calculate")
    [deliver] = named(finished, "slack.deliver")
    assert len(chats) == 2
    for span in [*chats, tool, deliver]:
        assert span.context.trace_id == accept.context.trace_id
        assert parent_id(span) == turn.context.span_id
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT
        attributes = dict(chat.attributes or {})
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == "fake-model"
        assert attributes["gen_ai.usage.input_tokens"] == 20
        assert attributes["gen_ai.usage.output_tokens"] == 10
        assert attributes["gen_ai.response.finish_reasons"]
    assert dict(tool.attributes or {})["gen_ai.tool.name"] == "calculate"
    assert dict(tool.attributes or {})["gen_ai.tool.call.id"] == "c1"
    # Each Slack call of the delivery is a span below it.
    stream_end = named(finished, "slack chat.stopStream")
    assert stream_end and parent_id(stream_end[0]) == deliver.context.span_id
    # No span carries the person's words.
    for span in finished:
        assert "6*7?" not in str(dict(span.attributes or {}))


async def test_a_failed_model_call_is_an_error_span(
    make_model: Callable[..., OpenAIChatModel], fake_llm: FakeLLM, spans: InMemorySpanExporter
) -> None:
    model = make_model(max_retries=0)
    fake_llm.add(error(400))
    with pytest.raises(LLMError) as failure:
        await model.complete([{"role": "user", "content": "hi"}], [])
    [span] = spans.get_finished_spans()
    assert span.name == "chat fake-model"
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == failure.value.kind


def test_a_turn_queued_before_traces_existed_still_loads() -> None:
    old = '{"team":"T1","channel":"C1","thread_ts":"1.0","user":"U1","text":"hi"}'
    turn = Turn.from_json(old)
    assert turn.traceparent == "" and turn.text == "hi"
    assert tracing.context_from(turn.traceparent) is None


def test_traces_are_off_unless_an_endpoint_is_set() -> None:
    assert tracing.otlp_endpoint(None, {}) is None
    assert tracing.otlp_endpoint("  ", {}) is None
    assert tracing.configure(None, environ={}) is None
    assert tracing.otlp_endpoint("http://cfg:4318", {}) == "http://cfg:4318"
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}
    assert tracing.otlp_endpoint("http://cfg:4318", environ) == "http://env:4318"


def test_the_configured_endpoint_gets_the_traces_path() -> None:
    assert tracing.traces_url("http://c:4318") == "http://c:4318/v1/traces"
    assert tracing.traces_url("http://c:4318/v1/traces/") == "http://c:4318/v1/traces"
    provider = tracing.build_provider("http://c:4318", "bot", {})
    try:
        [processor] = provider._active_span_processor._span_processors
        exporter = processor.span_exporter  # type: ignore[attr-defined]
        assert isinstance(exporter, RedactingSpanExporter)  # every span redacted on its way
        assert exporter.inner._endpoint == "http://c:4318/v1/traces"  # type: ignore[attr-defined]
        assert provider.resource.attributes["service.name"] == "bot"
    finally:
        provider.shutdown()


def test_spans_are_made_only_with_a_tracer_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ack path asks ``enabled()`` for every event and makes no span while it is off."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    from bot.observability.tracing import enabled

    for off in (trace.ProxyTracerProvider(), trace.NoOpTracerProvider()):
        monkeypatch.setattr(trace, "get_tracer_provider", lambda off=off: off)
        assert not enabled()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: TracerProvider())
    assert enabled()
