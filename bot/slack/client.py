"""The Slack Web API client, and which calls slack_sdk may send again by itself.

The client talks to ``SLACK_API_URL`` (Slack's, GovSlack's, or a test server), counted
and traced by method (bot/observability/slack_client.py).

429s are always retried after their Retry-After (Slack did nothing). A 5xx or a connection
that dropped after the request was sent may have left the call applied: for a call that
creates a message (there is no idempotency key) sending it again could show it twice, so
those are left to the turn's delivery, which records what it posts and looks for it by its
tag before posting again. A connection that was never made is safe to retry for any call.
"""

from __future__ import annotations

from typing import Any

from aiohttp import ClientConnectorError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.observability.slack_client import InstrumentedWebClient, method_of, rate_limited
from bot.slack.blocks.broadcasts import defuse
from bot.slack.session import shared_session
from bot.turn.ports import Deadline

CREATES = ("chat.postMessage", "chat.startStream")


def creates_a_message(request: HttpRequest) -> bool:
    return request.url.rstrip("/").rsplit("/", 1)[-1] in CREATES


class RateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """429s: retried after their Retry-After; each one counted (the last, not retried, is
    counted where the call raises)."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is not None and response.status_code == 429:
            rate_limited(method_of(request.url))
        return await super()._can_retry_async(
            state=state, request=request, response=response, error=error
        )


class ServerErrorRetry(AsyncServerErrorRetryHandler):
    """5xx: retried, except for calls that create a message."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if creates_a_message(request):
            return False
        return await super()._can_retry_async(
            state=state, request=request, response=response, error=error
        )


class ConnectionErrorRetry(AsyncConnectionErrorRetryHandler):
    """Dropped or refused connections: retried; for calls that create a message only when
    the connection was never made."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if creates_a_message(request):
            return isinstance(error, ClientConnectorError)
        return await super()._can_retry_async(
            state=state, request=request, response=response, error=error
        )


def retry_handlers() -> list[AsyncRetryHandler]:
    return [
        RateLimitRetry(max_retry_count=5),
        ConnectionErrorRetry(max_retry_count=2),
        ServerErrorRetry(max_retry_count=2),
    ]


class GuardedWebClient(InstrumentedWebClient):
    """Every message the bot writes is defused before it leaves: no ``<!channel>``,
    ``<!here>``, ``<!everyone>`` or user-group mention (bot/slack/blocks/broadcasts.py).
    Every call goes through one aiohttp session (bot/slack/session.py), opened at the first
    call and closed by :meth:`aclose`."""

    def __init__(self, *, allow_broadcast: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.allow_broadcast = allow_broadcast
        self._closed = False

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        if not self._closed and (self.session is None or self.session.closed):
            self.session = shared_session(self.timeout)
        if not self.allow_broadcast and api_method in WRITES:
            kwargs = {
                key: defuse(value) if key in ("json", "data", "params") else value
                for key, value in kwargs.items()
            }
        return await super().api_call(api_method, **kwargs)

    async def aclose(self) -> None:
        """Close the shared session; a call after this opens a session of its own."""
        self._closed = True
        if self.session is not None:
            await self.session.close()
            self.session = None


# The methods that write what people read (a view is no message: it notifies nobody).
WRITES = frozenset(
    {
        "chat.postMessage",
        "chat.postEphemeral",
        "chat.update",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
        "chat.scheduleMessage",
    }
)


class TurnClient(AsyncWebClient):
    """The Slack client of one turn (its view, its notice): every call is made within the
    owner's lease (``deadline``, bot/turn/store/lease.py). A call is not started unless it
    can end before the lease does, less a margin, with nothing awaited between that check
    and sending it; one still running then (a slow Slack, retries after a 429) is cut off.
    Either way the turn's attempt ends (``Aborted``) and its next owner carries on. What it
    sends goes through ``base`` (defused, counted, retried)."""

    def __init__(self, base: AsyncWebClient, deadline: Deadline) -> None:
        super().__init__(token=base.token, base_url=base.base_url, timeout=base.timeout)
        self.base = base
        self.deadline = deadline

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        async with self.deadline.bounded(f"Slack's {api_method}"):
            return await self.base.api_call(api_method, **kwargs)


def web_client(token: str, api_url: str, *, allow_broadcast: bool = False) -> GuardedWebClient:
    """slack_sdk's client at ``api_url``, retrying 429s after their Retry-After, and dropped
    connections and 5xx answers where sending the call again cannot show a message twice;
    what it writes is defused unless ``allow_broadcast``."""
    return GuardedWebClient(
        token=token,
        base_url=api_url if api_url.endswith("/") else api_url + "/",
        retry_handlers=retry_handlers(),
        allow_broadcast=allow_broadcast,
    )
