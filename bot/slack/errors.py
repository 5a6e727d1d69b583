"""Sorting Slack's failures: worth trying again later, or never going to work.

slack_sdk has already retried 429s (after Retry-After), 5xx answers and dropped connections
by the time an error reaches the bot. What is left is sorted here, so delivery can keep a
turn pending through an outage and give up at once on a channel that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp
from slack_sdk.errors import SlackApiError

from bot.lifecycle.responder import DeliveryFailed, Undeliverable

# Slack's own words for "not now".
TEMPORARY = frozenset(
    {
        "ratelimited",
        "rate_limited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "team_added_to_org",
    }
)
# The message is gone or can no longer be edited: post a new one instead.
MESSAGE_GONE = frozenset(
    {"message_not_found", "cant_update_message", "edit_window_closed", "cant_delete_message"}
)
# The stream is over (expired, or stopped by the person): write into it as a message.
STREAM_OVER = frozenset({"message_not_in_streaming_state", "streaming_state_conflict"})


def error_code(exc: BaseException) -> str:
    """Slack's error string, or the exception's class name."""
    response = getattr(exc, "response", None)
    if response is not None:
        with contextlib.suppress(Exception):
            code = response.get("error")
            if code:
                return str(code)
    return type(exc).__name__


def is_temporary(exc: BaseException) -> bool:
    if isinstance(exc, SlackApiError):
        status = getattr(exc.response, "status_code", 200)
        return status >= 500 or status == 429 or error_code(exc) in TEMPORARY
    return isinstance(exc, aiohttp.ClientError | asyncio.TimeoutError | OSError)


def for_delivery(exc: BaseException) -> DeliveryFailed | Undeliverable:
    """The delivery error to raise for a failed Slack call."""
    code = error_code(exc)
    if is_temporary(exc):
        return DeliveryFailed(code)
    return Undeliverable(code)
