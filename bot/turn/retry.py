"""Showing something to a person until Slack takes it: what the owner does with the view's
failures (the answer, or an approval card).

``DeliveryFailed`` (5xx, connection, 429 beyond slack_sdk's retries, Redis under the
delivery record) waits 1 s, doubling to 30 s, and tries again, for up to
``queue.deliver_timeout_s`` since ``since``; ``Undeliverable`` (Slack answered that it never
will) gives up at once. A lost lease or a shutdown ends the attempt (:class:`Aborted`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.turn import telemetry
from bot.turn.fence import TurnFence
from bot.turn.outcome import NOT_DELIVERED
from bot.turn.ports import DeliveryFailed, Undeliverable
from bot.turn.store.lease import Aborted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Taken:
    """Slack shows it."""


@dataclass(frozen=True)
class GaveUp:
    """Slack never took it: the turn is to be given up with this reason, notice and kind."""

    reason: str
    notice: str  # for the person ("" when there is nothing to say, only things to tidy)
    kind: str  # the dead letter's kind, for the metric


@dataclass(frozen=True)
class SlackRetries:
    fence: TurnFence
    retry_start_s: float
    retry_max_s: float
    deliver_timeout_s: float

    async def until_taken(
        self, show: Callable[[], Awaitable[None]], since: float, what: str = "the answer"
    ) -> Taken | GaveUp:
        entry_id = self.fence.queued.entry_id
        delay = self.retry_start_s
        while True:
            if not self.fence.valid():
                raise Aborted(f"turn {entry_id}: lease gone before showing {what}")
            try:
                with telemetry.delivery_span():
                    await show()
                return Taken()
            except Undeliverable as exc:
                log.error("turn %s: %s can never be shown: %s", entry_id, what, exc)
                # Nothing to say to the person there, but what the turn left open is tidied.
                return GaveUp(f"undeliverable: {exc}", "", "undeliverable")
            except DeliveryFailed as exc:
                waited = time.time() - since
                left = self.deliver_timeout_s - waited
                if left <= 0:
                    log.error(
                        "Slack refused %s of turn %s for %.0f s (%s); giving up on it",
                        what,
                        entry_id,
                        waited,
                        exc,
                    )
                    return GaveUp("Slack refused the answer", NOT_DELIVERED, "delivery_timeout")
                telemetry.delivery_retried()
                log.warning(
                    "Slack did not take %s of turn %s (%s); trying again in %.0f s",
                    what,
                    entry_id,
                    exc,
                    min(delay, left),
                )
                if not await self.fence.wait(min(delay, left)):
                    raise Aborted(f"turn {entry_id} interrupted while showing {what}") from None
                delay = min(delay * 2, self.retry_max_s)
