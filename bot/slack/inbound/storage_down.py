"""What Slack gets when Redis cannot be reached.

Events are refused (503 in HTTP mode, no ack in Socket Mode), so Slack delivers them again
later. Slash commands and button clicks are never delivered again, so the person gets a
plain sentence at once instead: a slash command in its (ephemeral) ack, a button click as an
ephemeral message through the interaction's response_url.

A Redis outage (a restart, a failover) refuses every request for a while: the log gets one
warning a minute saying why and how many were refused, never one line per request.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.response import BoltResponse

from bot.state.redis.errors import REDIS_DOWN, StateUnavailable

log = logging.getLogger(__name__)

STORAGE_DOWN_TEXT = "I can't reach my storage right now; please try again in a minute."

# Interactions that carry a response_url for an ephemeral reply.
_INTERACTIONS = {"block_actions", "interactive_message", "message_action"}
WARN_EVERY_S = 60.0


class RefusalLog:
    """The requests refused for want of Redis: the first at once, then one warning a minute
    with how many of each kind were refused since the last and the latest reason."""

    def __init__(
        self, every_s: float = WARN_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.every_s = every_s
        self.clock = clock
        self.counts: Counter[str] = Counter()
        self.next_at = 0.0

    def refused(self, what: str, why: str) -> None:
        """``what`` was refused (an event, a command, a click: the person told or not)."""
        self.counts[what] += 1
        now = self.clock()
        if now < self.next_at:
            return
        counted = ", ".join(f"{n} {kind}" for kind, n in sorted(self.counts.items()))
        log.warning("Redis is unreachable (%s): refused %s", why, counted)
        self.counts.clear()
        self.next_at = now + self.every_s


def is_storage_down(error: BaseException) -> bool:
    return isinstance(error, (StateUnavailable, *REDIS_DOWN))


async def storage_down_response(
    error: BaseException,
    body: dict[str, Any],
    respond: AsyncRespond | None,
    refusals: RefusalLog,
) -> BoltResponse:
    """The answer to a request whose handling failed because Redis is unreachable (counted
    in ``refusals``)."""
    why = f"{type(error).__name__}: {error}"
    if body.get("command"):
        refusals.refused("slash commands (the person told)", why)
        return BoltResponse(
            status=200, body={"text": STORAGE_DOWN_TEXT, "response_type": "ephemeral"}
        )
    if body.get("type") in _INTERACTIONS:
        await _tell(respond, why, body.get("type"), refusals)
        return BoltResponse(status=200)
    refusals.refused("events (Slack sends them again)", why)
    return BoltResponse(status=503, body="state store unavailable; retry later")


async def _tell(respond: AsyncRespond | None, why: str, kind: Any, refusals: RefusalLog) -> None:
    if respond is None or not respond.response_url:
        refusals.refused(f"{kind}s (no response_url to tell the person)", why)
        return
    try:
        await respond(text=STORAGE_DOWN_TEXT, response_type="ephemeral", replace_original=False)
    except Exception as exc:  # Slack unreachable as well: the log is all that is left
        refusals.refused(f"{kind}s (telling the person failed: {type(exc).__name__})", why)
        return
    refusals.refused(f"{kind}s (the person told)", why)
