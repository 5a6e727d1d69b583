"""Spans leave the process redacted: every text a span carries (its name, its attributes,
its events' and links' attributes, its status description) goes through the redactor
(bot/observability/redaction.py) on its way to the exporter, and a URL in it loses its
query. Whoever set an attribute, no configured secret is exported."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Status
from opentelemetry.util.types import Attributes, AttributeValue

from bot.observability.redaction import REDACTOR, Redactor, without_queries


class RedactingSpanExporter(SpanExporter):
    """Wraps an exporter: each span handed on as a redacted copy."""

    def __init__(self, inner: SpanExporter, redactor: Redactor = REDACTOR) -> None:
        self.inner = inner
        self.redactor = redactor

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([redacted(span, self.redactor) for span in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def redacted(span: ReadableSpan, redactor: Redactor = REDACTOR) -> ReadableSpan:
    """A copy of ``span`` with every text in it redacted."""

    def text(value: str) -> str:
        return without_queries(redactor.redact(value))

    def value(given: AttributeValue) -> AttributeValue:
        if isinstance(given, str):
            return text(given)
        if isinstance(given, Sequence) and any(isinstance(item, str) for item in given):
            return tuple(text(item) if isinstance(item, str) else item for item in given)
        return given

    def attributes(given: Attributes) -> dict[str, AttributeValue]:
        items: Mapping[str, AttributeValue] = given or {}
        return {key: value(item) for key, item in items.items()}

    status = span.status
    if status.description:
        status = Status(status.status_code, text(status.description))
    return ReadableSpan(
        name=text(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes(span.attributes),
        events=[
            Event(text(event.name), attributes(event.attributes), event.timestamp)
            for event in span.events
        ],
        links=[Link(link.context, attributes(link.attributes)) for link in span.links],
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
