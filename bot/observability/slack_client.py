"""The Slack Web API client, counted and traced: calls, errors and 429s by method, and a
span per call. The counting never changes what a call returns or raises."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.observability import metrics
from bot.observability.tracing import fail, tracer


def method_of(url: str) -> str:
    """The API method a request URL names (``https://slack.com/api/chat.postMessage``)."""
    return metrics.label(url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])


def rate_limited(method: str) -> None:
    metrics.safely(lambda: metrics.SLACK_RATE_LIMITED.labels(method=method).inc())


class InstrumentedWebClient(AsyncWebClient):
    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        method = metrics.label(api_method)
        metrics.safely(lambda: metrics.SLACK_CALLS.labels(method=method).inc())
        with tracer().start_as_current_span(
            f"slack {method}",
            kind=SpanKind.CLIENT,
            attributes={"rpc.system": "slack", "rpc.method": method},
            record_exception=False,  # Slack's answer may quote a message: not in traces
            set_status_on_exception=False,
        ) as span:
            try:
                return await super().api_call(api_method, **kwargs)
            except SlackApiError as exc:
                error = str(exc.response.get("error") or exc.response.status_code)
                if exc.response.status_code == 429:
                    rate_limited(method)  # the last one, which was not retried
                _failed(method, error)
                fail(span, metrics.label(error))
                raise
            except Exception as exc:
                _failed(method, type(exc).__name__)
                fail(span, type(exc).__name__)
                raise


def _failed(method: str, error: str) -> None:
    metrics.safely(
        lambda: metrics.SLACK_ERRORS.labels(method=method, error=metrics.label(error)).inc()
    )
