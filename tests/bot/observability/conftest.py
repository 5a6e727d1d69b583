from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class _WhileRecording(SimpleSpanProcessor):
    """Exports only while a test asks for spans, so the rest of the session keeps none."""

    recording = False

    def on_end(self, span: ReadableSpan) -> None:
        if self.recording:
            super().on_end(span)


_EXPORTER = InMemorySpanExporter()
_PROCESSOR = _WhileRecording(_EXPORTER)
_INSTALLED: list[TracerProvider] = []


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The SDK's in-memory exporter behind the global tracer provider (installed once per
    session: OpenTelemetry allows one), empty at the start of the test."""
    if not _INSTALLED:
        provider = TracerProvider()
        provider.add_span_processor(_PROCESSOR)
        trace.set_tracer_provider(provider)
        _INSTALLED.append(provider)
    _EXPORTER.clear()
    _PROCESSOR.recording = True
    try:
        yield _EXPORTER
    finally:
        _PROCESSOR.recording = False
        _EXPORTER.clear()
