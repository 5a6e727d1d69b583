"""OpenTelemetry traces: off unless an OTLP endpoint is configured.

``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, read by the
exporter as the OTel spec says) or the config key ``telemetry.otlp_endpoint`` switches the
OTLP/HTTP exporter on. Without either no tracer provider is installed: the API's no-op
tracer records nothing and nothing leaves the machine.

One trace per turn: the ingress span (the event accepted and queued) is the root; its W3C
``traceparent`` travels inside the queued turn's JSON (``Turn.traceparent``), and the
worker's ``turn`` span (one per attempt) is its child, with the model calls
(``chat <model>``, GenAI semantic conventions), the tool calls (``execute_tool <name>``), the
Slack deliveries (``slack.deliver``) and each Slack Web API call below it. Spans leave the
process redacted (bot/observability/span_export.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

log = logging.getLogger(__name__)

TRACER_NAME = "slack_agent"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_PROPAGATOR = TraceContextTextMapPropagator()


def tracer() -> Tracer:
    """The bot's tracer (a proxy until a provider is installed, so always safe to use)."""
    return trace.get_tracer(TRACER_NAME)


def enabled() -> bool:
    """Whether a tracer provider is installed (spans can be recorded); cheap enough to ask
    on every event, so the ack path makes no span at all while tracing is off."""
    return not isinstance(
        trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
    )


def otlp_endpoint(configured: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """Where traces go: the environment's OTLP endpoint, else ``telemetry.otlp_endpoint``,
    else nowhere (None)."""
    environ = os.environ if environ is None else environ
    for name in ENDPOINT_VARIABLES:
        if environ.get(name, "").strip():
            return environ[name].strip()
    return configured.strip() if configured and configured.strip() else None


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for a base endpoint given in the config file (the exporter
    appends ``/v1/traces`` itself only to the environment's base endpoint)."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def configure(
    configured_endpoint: str | None,
    service_name: str = "slack-agent",
    environ: Mapping[str, str] | None = None,
) -> TracerProvider | None:
    """Install a tracer provider with the OTLP exporter when an endpoint is set; return the
    provider (call its ``shutdown()`` at exit to flush), or None when tracing stays off."""
    environ = os.environ if environ is None else environ
    endpoint = otlp_endpoint(configured_endpoint, environ)
    if endpoint is None:
        return None
    provider = build_provider(endpoint, service_name, environ)
    trace.set_tracer_provider(provider)
    log.info("sending traces to %s", endpoint)
    return provider


def build_provider(endpoint: str, service_name: str, environ: Mapping[str, str]) -> TracerProvider:
    """A tracer provider that batches spans to the OTLP/HTTP exporter (not installed)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from bot.observability.span_export import RedactingSpanExporter

    from_environment = any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)
    # The exporter reads the OTEL_ variables itself (the traces path included).
    exporter = OTLPSpanExporter() if from_environment else OTLPSpanExporter(traces_url(endpoint))
    provider = TracerProvider(
        resource=Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME", service_name)})
    )
    # Every span redacted on its way out (no configured secret in any attribute).
    provider.add_span_processor(BatchSpanProcessor(RedactingSpanExporter(exporter)))
    return provider


def current_traceparent() -> str:
    """The W3C traceparent of the current span, or "" when nothing is traced."""
    carrier: dict[str, str] = {}
    try:
        _PROPAGATOR.inject(carrier)
    except Exception:
        log.debug("could not take the traceparent", exc_info=True)
    return carrier.get("traceparent", "")


def context_from(traceparent: str) -> otel_context.Context | None:
    """The remote parent a queued turn carries, or None (an old entry, or none sent)."""
    if not traceparent:
        return None
    try:
        return _PROPAGATOR.extract({"traceparent": traceparent})
    except Exception:
        log.debug("could not read the traceparent %r", traceparent, exc_info=True)
        return None


def fail(span: Span, error_type: str, description: str = "") -> None:
    """Mark ``span`` as failed with an ``error.type``."""
    if not span.is_recording():
        return
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, description or error_type))
