"""From a Slack event to a queued turn: who the bot answers, and what it ignores.

``classify`` is pure: it decides from the event alone. ``Ingress`` does the I/O: it checks
follow-ups against the threads the bot is in, notes new threads, and enqueues. Enqueueing is
all that happens before Slack gets its ack; when Redis is down it raises StateUnavailable and
the app answers 503 (HTTP) or sends no ack (Socket Mode), so Slack delivers again later.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.trace import SpanKind

from bot.config.schema import SlackConfig
from bot.observability.tracing import current_traceparent, tracer
from bot.slack.inbound.text import addressed_to_others, clean_text, mentions
from bot.state.asides import ThreadAsides
from bot.state.errors import REDIS_DOWN, StateUnavailable
from bot.state.participation import ThreadParticipation
from bot.turn.message import SLACKBOT, SlackMessage
from bot.turn.model import ThreadKey, Turn
from bot.turn.store.queue import TurnQueue

log = logging.getLogger(__name__)

# Slack wants its ack within 3 seconds. An enqueue that takes longer than this (a Redis that
# hangs, or keeps refusing through every retry) is given up and answered with 503; Slack's
# redelivery is safe because enqueue is deduplicated by event id and by message.
ENQUEUE_DEADLINE_S = 2.0

# Message subtypes that are not someone writing to the bot.
IGNORED_SUBTYPES = {
    "message_changed",
    "message_deleted",
    "message_replied",
    "channel_join",
    "channel_leave",
    "group_join",
    "group_leave",
    "channel_topic",
    "channel_purpose",
    "channel_name",
    "channel_archive",
    "channel_unarchive",
    "pinned_item",
    "unpinned_item",
    "ekm_access_denied",
    "assistant_app_thread",
    "bot_add",
    "bot_remove",
    "tombstone",
}
ANSWERED_SUBTYPES = {None, "file_share", "thread_broadcast", "me_message", "bot_message"}


@dataclass(frozen=True)
class Ignored:
    """Why an event gets no answer. ``quiet`` reasons (talk that was never for the bot, the
    bot's own messages) are logged at DEBUG so busy channels do not flood the log; every
    other reason at INFO."""

    reason: str
    quiet: bool = False


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


@dataclass(frozen=True)
class Identity:
    """Who the bot is in this workspace (from Bolt's context, i.e. auth.test)."""

    team_id: str
    bot_user_id: str | None
    bot_id: str | None


@dataclass(frozen=True)
class Aside:
    """A reply in a channel thread that the bot does not answer (people talking to each
    other, another bot, or follow-ups are off) but keeps as context when it takes part in
    the thread."""

    thread: ThreadKey
    message: SlackMessage
    event_id: str
    reason: str


def classify(
    event: dict[str, Any], event_id: str, me: Identity, settings: SlackConfig
) -> Turn | Aside | Ignored:
    """A turn for ``event``, an aside to keep, or why it is ignored. Follow-ups are marked
    ``kind="followup"`` and still need :meth:`Ingress.accept` to check the bot is in the
    thread."""
    kind = event.get("type")
    subtype = event.get("subtype")
    if kind not in ("app_mention", "message"):
        return Ignored(f"not a message ({kind})")
    if subtype in IGNORED_SUBTYPES or subtype not in ANSWERED_SUBTYPES:
        changed = event.get("message") or event.get("previous_message")
        if isinstance(changed, dict) and _written_by(changed, me):
            return Ignored(f"subtype {subtype} of its own message", quiet=True)
        return Ignored(f"subtype {subtype}: not a new message")
    if event.get("hidden"):
        return Ignored("hidden")
    if _written_by(event, me):
        return Ignored("own message", quiet=True)
    user = event.get("user") or ""
    if user == SLACKBOT:
        return Ignored("a message from Slackbot")
    channel = event.get("channel") or ""
    ts = event.get("ts") or ""
    thread_ts = event.get("thread_ts")
    channel_type = event.get("channel_type") or ""
    raw = event.get("text") or ""
    text = clean_text(raw, me.bot_user_id)
    message = SlackMessage.of(event)
    # One thread is one conversation whoever writes in it: the key is the bot's workspace
    # (the envelope's), never the author's (Slack Connect: another workspace).
    team = me.team_id or event.get("team") or ""
    if (event.get("bot_id") or subtype == "bot_message") and not settings.answer_bots:
        if thread_ts and channel_type != "im" and kind == "message":
            # Another bot's reply in a channel thread (a CI result, an alert): context.
            return Aside(ThreadKey(team, channel, thread_ts), message, event_id, OTHER_BOT)
        return Ignored(OTHER_BOT)
    if not text and not message.has_content and kind != "app_mention":
        return Ignored("empty message")

    if kind == "app_mention":
        turn_kind = "mention"
    elif channel_type == "im":
        turn_kind = "assistant" if thread_ts else "dm"
    elif mentions(raw, me.bot_user_id):
        return Ignored("a mention: the app_mention event carries it", quiet=True)
    elif thread_ts and addressed_to_others(raw, me.bot_user_id):
        return Aside(ThreadKey(team, channel, thread_ts), message, event_id, ADDRESSED_TO_OTHERS)
    elif thread_ts and settings.follow_up_in_threads:
        turn_kind = "followup"
    elif thread_ts:
        return Aside(ThreadKey(team, channel, thread_ts), message, event_id, FOLLOW_UPS_OFF)
    else:
        return Ignored("not addressed to the bot", quiet=True)
    return Turn(
        team=team,
        channel=channel,
        thread_ts=thread_ts or ts,
        user=user or event.get("bot_id") or "",
        text=text or _without_text(message, in_thread=bool(thread_ts)),
        message_ts=ts,
        event_id=event_id,
        kind=turn_kind,
        extra={"message": message.to_dict()},
    )


ADDRESSED_TO_OTHERS = "a reply addressed to someone else"
OTHER_BOT = "another bot's message (slack.answer_bots is off)"
FOLLOW_UPS_OFF = "a thread reply without a mention (follow-ups are off)"


def _without_text(message: SlackMessage, *, in_thread: bool) -> str:
    """A turn's short text when its message has none: what the session is titled after
    (the model is given the whole message, bot/slack/inbox)."""
    if message.forwards:
        return "Forwarded message"
    if message.files:
        return "(sent files without text)"
    return "Look at this thread" if in_thread else "(mentioned without a message)"


def _written_by(message: dict[str, Any], me: Identity) -> bool:
    """Whether the bot itself wrote ``message``."""
    return bool(
        (me.bot_user_id and message.get("user") == me.bot_user_id)
        or (me.bot_id and message.get("bot_id") == me.bot_id)
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

    async def listen(self, aside: Aside) -> bool:
        """Keep ``aside`` as context when the bot takes part in its thread; True when kept.

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
        return kept

    async def accept(self, turn: Turn) -> str | None:
        """Enqueue ``turn``; return its entry id, or None when it is a duplicate or a
        follow-up in a thread the bot is not part of.

        Raises :class:`StateUnavailable` when Redis cannot be reached or does not answer
        within ``deadline_s``; then the turn was not queued, or was queued and a redelivery
        will be recognised as a duplicate.
        """
        deadline = asyncio.timeout(self.deadline_s)
        try:
            # The root of the turn's trace; its traceparent travels in the queued turn.
            with tracer().start_as_current_span(
                "slack_agent.accept",
                kind=SpanKind.PRODUCER,
                attributes={
                    "slack_agent.turn.kind": turn.kind,
                    "slack.team_id": turn.team,
                    "slack.channel_id": turn.channel,
                    "slack.thread_ts": turn.thread_ts,
                },
                record_exception=False,
            ) as span:
                async with deadline:
                    entry_id = await self._accept(turn)
                if span.is_recording():
                    span.set_attribute("slack_agent.queued", entry_id is not None)
                    if entry_id:
                        span.set_attribute("slack_agent.turn.id", entry_id)
                return entry_id
        except REDIS_DOWN as exc:
            why = (
                f"no answer within {self.deadline_s:g} s"
                if deadline.expired()
                else f"{type(exc).__name__}: {exc}"
            )
            raise StateUnavailable(f"Redis is unreachable: {why}") from exc

    async def _accept(self, turn: Turn) -> str | None:
        participation = self.participation
        if turn.kind == "followup":
            if not await participation.joined(turn.thread_key):
                log_not_answered(
                    turn.channel,
                    turn.message_ts,
                    turn.event_id,
                    f"a reply in thread {turn.thread_ts} without a mention, and the bot has not "
                    "joined that thread (or Redis lost which threads it is in)",
                )
                return None
            new_thread = False
        else:
            new_thread = await participation.join(turn.thread_key)
        entry_id = await self.queue.enqueue(
            replace(
                turn,
                extra={**turn.extra, "new_thread": new_thread},
                traceparent=current_traceparent(),
            )
        )
        if entry_id is None:
            log_not_answered(
                turn.channel,
                turn.message_ts,
                turn.event_id,
                "a duplicate delivery (this event or this message is already queued)",
            )
        return entry_id
