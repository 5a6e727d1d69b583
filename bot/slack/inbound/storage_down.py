"""What Slack gets when Redis cannot be reached.

Events are refused (503 in HTTP mode, no ack in Socket Mode), so Slack delivers them again
later. Slash commands and button clicks are never delivered again, so the person gets a
plain sentence at once instead: a slash command in its (ephemeral) ack, a button click as an
ephemeral message through the interaction's response_url.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.response import BoltResponse

from bot.state.redis.errors import REDIS_DOWN, StateUnavailable

log = logging.getLogger(__name__)

STORAGE_DOWN_TEXT = "I can't reach my storage right now; please try again in a minute."

# Interactions that carry a response_url for an ephemeral reply.
_INTERACTIONS = {"block_actions", "interactive_message", "message_action"}


def is_storage_down(error: BaseException) -> bool:
    return isinstance(error, (StateUnavailable, *REDIS_DOWN))


async def storage_down_response(
    error: BaseException, body: dict[str, Any], respond: AsyncRespond | None
) -> BoltResponse:
    """The answer to a request whose handling failed because Redis is unreachable."""
    why = f"{type(error).__name__}: {error}"
    if body.get("command"):
        log.warning("Redis is unreachable (%s); told the person who ran %s", why, body["command"])
        return BoltResponse(
            status=200, body={"text": STORAGE_DOWN_TEXT, "response_type": "ephemeral"}
        )
    if body.get("type") in _INTERACTIONS:
        await _tell(respond, why, body.get("type"))
        return BoltResponse(status=200)
    log.warning("refusing event %s: Redis is unreachable (%s)", body.get("event_id"), why)
    return BoltResponse(status=503, body="state store unavailable; retry later")


async def _tell(respond: AsyncRespond | None, why: str, kind: Any) -> None:
    if respond is None or not respond.response_url:
        log.warning("Redis is unreachable (%s); a %s had no response_url to answer", why, kind)
        return
    try:
        await respond(text=STORAGE_DOWN_TEXT, response_type="ephemeral", replace_original=False)
    except Exception as exc:  # Slack unreachable as well: the log is all that is left
        log.warning(
            "Redis is unreachable (%s), and telling the person failed: %s",
            why,
            type(exc).__name__,
        )
        return
    log.warning("Redis is unreachable (%s); told the person who clicked (%s)", why, kind)
