"""From a Slack message event to the queue, before Slack gets its ack.

:class:`Ingress` classifies a message event (:meth:`Ingress.receive`); it checks follow-ups
against the threads the bot is in, notes new threads, and enqueues (:meth:`Ingress.accept`);
it keeps an :class:`~bot.slack.inbound.classify.Aside` as context where the bot takes part
(:meth:`Ingress.listen`). Each returns a closed outcome.
This is all that happens before the ack; when Redis is down it raises StateUnavailable and
the app answers 503 (HTTP) or sends no ack (Socket Mode), so Slack delivers again later.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.trace import SpanKind

from bot.config.schema import SlackConfig
from bot.observability.tracing import current_traceparent, tracer
from bot.observability.tracing import enabled as tracing_enabled
from bot.slack.inbound.classify import Aside, Identity, Ignored, classify
from bot.state.redis.errors import REDIS_DOWN, StateUnavailable
from bot.turn.model import Turn, TurnKind
from bot.turn.store.asides import ThreadAsides
from bot.turn.store.participation import ThreadParticipation
from bot.turn.store.queue import TurnQueue

log = logging.getLogger(__name__)

# Slack wants its ack within 3 seconds. An enqueue that takes longer than this (a Redis that
# hangs, or keeps refusing through every retry) is given up and answered with 503; Slack's
# redelivery is safe because enqueue is deduplicated by event id and by message.
ENQUEUE_DEADLINE_S = 2.0


@dataclass(frozen=True)
class Queued:
    """The turn is in the queue under ``entry_id``."""

    entry_id: str


@dataclass(frozen=True)
class Duplicate:
    """This event, or this message, is queued already: a retry or a second delivery."""


@dataclass(frozen=True)
class NotJoined:
    """A follow-up without a mention in a thread the bot is not part of."""


Accepted = Queued | Duplicate | NotJoined


@dataclass(frozen=True)
class Kept:
    """The aside is kept as context for the bot's next turn in its thread."""


@dataclass(frozen=True)
class NotKept:
    """The bot takes no part in the aside's thread: nothing to keep it for."""


Heard = Kept | NotKept


def log_not_answered(
    channel: str | None, ts: str | None, event_id: str, reason: str, *, quiet: bool = False
) -> None:
    """One line for a message the bot acknowledged and will not answer (never its text)."""
    log.log(
        logging.DEBUG if quiet else logging.INFO,
        "not answering message %s in %s (event %s): %s",
        ts or "?",
        channel or "?",
        event_id or "?",
        reason,
    )


class Ingress:
    def __init__(
        self,
        queue: TurnQueue,
        participation: ThreadParticipation,
        settings: SlackConfig,
        asides: ThreadAsides | None = None,
        *,
        deadline_s: float = ENQUEUE_DEADLINE_S,
    ) -> None:
        self.queue = queue
        self.participation = participation
        self.settings = settings
        self.asides = asides
        self.deadline_s = deadline_s

    async def receive(
        self, event: dict[str, Any], event_id: str, me: Identity, *, shared: bool | None = None
    ) -> None:
        """A message event (a mention, a direct message, a reply in a thread): queued as a
        turn, kept as context, or logged as not answered. ``shared``: the envelope's
        ``is_ext_shared_channel`` (None when it had none), carried on the turn.

        Raises :class:`StateUnavailable` like :meth:`accept`, so Slack delivers it again.
        """
        decision = classify(event, event_id, me, self.settings, shared=shared)
        if isinstance(decision, Ignored):
            log_not_answered(
                event.get("channel"),
                event.get("ts"),
                event_id,
                decision.reason,
                quiet=decision.quiet,
            )
        elif isinstance(decision, Aside):
            await self.listen(decision)
        else:
            await self.accept(decision)

    async def listen(self, aside: Aside) -> Heard:
        """Keep ``aside`` as context when the bot takes part in its thread.

        Raises :class:`StateUnavailable` like :meth:`accept`, so Slack delivers it again.
        """
        deadline = asyncio.timeout(self.deadline_s)
        message = aside.message
        try:
            async with deadline:
                kept = self.asides is not None and await self.participation.joined(aside.thread)
                if kept and self.asides is not None:
                    await self.asides.add(
                        aside.thread, message.ts, json.dumps(message.to_dict(), sort_keys=True)
                    )
        except REDIS_DOWN as exc:
            why = "no answer in time" if deadline.expired() else f"{type(exc).__name__}: {exc}"
            raise StateUnavailable(f"Redis is unreachable: {why}") from exc
        log_not_answered(
            aside.thread.channel,
            message.ts,
            aside.event_id,
            f"{aside.reason}; kept as context for the thread" if kept else aside.reason,
            quiet=True,
        )
        return Kept() if kept else NotKept()

    async def accept(self, turn: Turn) -> Accepted:
        """Enqueue ``turn`` (unless it is a duplicate, or a follow-up in a thread the bot is
        not part of).

        Raises :class:`StateUnavailable` when Redis cannot be reached or does not answer
        within ``deadline_s``; then the turn was not queued, or was queued and a redelivery
        will be recognised as a duplicate.
        """
        deadline = asyncio.timeout(self.deadline_s)
        try:
            # The root of the turn's trace; its traceparent travels in the queued turn. No
            # span while tracing is off: a burst's acks wait on every event's CPU.
            root = (
                tracer().start_as_current_span(
                    "slack_agent.accept",
                    kind=SpanKind.PRODUCER,
                    attributes={
                        "slack_agent.turn.kind": turn.kind.value,
                        "slack.team_id": turn.team,
                        "slack.channel_id": turn.channel,
                        "slack.thread_ts": turn.thread_ts,
                    },
                    record_exception=False,
                )
                if tracing_enabled()
                else contextlib.nullcontext(None)
            )
            with root as span:
                async with deadline:
                    accepted = await self._accept(turn)
                if span is not None and span.is_recording():
                    span.set_attribute("slack_agent.queued", isinstance(accepted, Queued))
                    if isinstance(accepted, Queued):
                        span.set_attribute("slack_agent.turn.id", accepted.entry_id)
                return accepted
        except REDIS_DOWN as exc:
            why = (
                f"no answer within {self.deadline_s:g} s"
                if deadline.expired()
                else f"{type(exc).__name__}: {exc}"
            )
            raise StateUnavailable(f"Redis is unreachable: {why}") from exc

    async def _accept(self, turn: Turn) -> Accepted:
        participation = self.participation
        if turn.kind is TurnKind.FOLLOWUP:
            if not await participation.joined(turn.thread_key):
                log_not_answered(
                    turn.channel,
                    turn.message_ts,
                    turn.event_id,
                    f"a reply in thread {turn.thread_ts} without a mention, and the bot has not "
                    "joined that thread (or Redis lost which threads it is in)",
                )
                return NotJoined()
            join_ttl_s = None
        else:
            join_ttl_s = participation.ttl_s  # joined in the same step as it is queued
        traceparent = current_traceparent()
        if traceparent:
            turn = replace(turn, traceparent=traceparent)
        entry_id = await self.queue.enqueue(turn, join_ttl_s=join_ttl_s)
        if entry_id is None:
            log_not_answered(
                turn.channel,
                turn.message_ts,
                turn.event_id,
                "a duplicate delivery (this event or this message is already queued)",
            )
            return Duplicate()
        return Queued(entry_id)
