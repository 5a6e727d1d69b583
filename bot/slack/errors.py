"""Sorting Slack's failures: worth trying again later, or never going to work.

slack_sdk has already retried what it safely could (bot/slack/client.py) by the time an
error reaches the bot. What is left is sorted here, so delivery keeps a turn pending through
an outage and gives up at once only when Slack answered that it never will (an error such
as ``channel_not_found``, ``not_in_channel`` or ``is_archived``). Anything that is not a
Slack answer (a timeout, a dropped connection, Redis) is worth another try. Among the
refusals for good, those that concern one conversation only (:func:`channel_refusal`) let a
schedule's run pause its schedule rather than try again at every run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import aiohttp
import redis.exceptions
from slack_sdk.errors import SlackApiError

from bot.turn.ports import DeliveryFailed, Undeliverable
from bot.turn.store.lease import Aborted

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
# The person stopped the stream in Slack: never write into it again.
STOPPED_BY_USER = frozenset({"stopped_by_user"})
# Slack refusing the bot one conversation for good: gone, archived, the bot not in it, or
# posting there restricted or withheld. Not the whole bot's refusals (``invalid_auth``,
# ``missing_scope``...): they are no one channel's, and pausing it would not tell anyone why.
CHANNEL_REFUSED = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "channel_is_archived",
        "restricted_action",
        "restricted_action_read_only_channel",
        "restricted_action_thread_only_channel",
        "team_access_not_granted",
        "ekm_access_denied",
        "access_denied",
    }
)


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


def channel_refusal(exc: BaseException) -> str | None:
    """Slack's word when ``exc`` is Slack refusing the bot one conversation for good
    (:data:`CHANNEL_REFUSED`), else None: anything else may be worth another try, or is not
    the conversation's."""
    if not isinstance(exc, SlackApiError) or is_temporary(exc):
        return None
    code = error_code(exc)
    return code if code in CHANNEL_REFUSED else None


def for_delivery(exc: BaseException) -> BaseException:
    """What a failed delivery step raises to the turn's owner: the lifecycle's own errors as
    they are; Redis failing (the delivery record could not be saved) and Slack failing for
    now as DeliveryFailed (try again later); Slack refusing for good as Undeliverable.
    Anything else (a bug) is returned as it is: it counts as a failed attempt."""
    if isinstance(exc, Aborted | DeliveryFailed | Undeliverable):
        return exc
    if isinstance(exc, redis.exceptions.RedisError):
        return DeliveryFailed(f"Redis: {type(exc).__name__}")
    if is_temporary(exc):
        return DeliveryFailed(error_code(exc))
    if isinstance(exc, SlackApiError):
        return Undeliverable(error_code(exc))
    return exc


@contextlib.contextmanager
def sorted_for_delivery() -> Iterator[None]:
    """Whatever fails inside is raised as :func:`for_delivery` sorts it."""
    try:
        yield
    except Exception as exc:
        sorted_ = for_delivery(exc)
        if sorted_ is exc:
            raise
        raise sorted_ from exc
