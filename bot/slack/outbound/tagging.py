"""Tags on what the bot posts, and finding its own messages in a thread again (and a
scheduled run's headline in its channel).

Slack has no idempotency key: a post can succeed and the process die before the ts is
recorded. So every message the bot posts carries message metadata naming the turn (the
message it answers) and what it is (progress, an answer part, a notice). A turn resumed
after a crash that recorded "posting" without a ts looks in the thread before posting again.
Streams cannot be tagged when they start, so an untagged message of the bot's that came
after the person's message is taken to be the turn's unrecorded stream.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.errors import error_code, is_temporary
from bot.slack.identity import Me, WhoAmI
from bot.turn.model import Turn
from bot.turn.ports import DeliveryFailed

log = logging.getLogger(__name__)

EVENT_TYPE = "slack_agent"
PAGE = 200
MAX_PAGES = 20
HEADLINE = "schedule"  # the kind of a scheduled run's headline (not a turn's post)


def tag(
    message_ts: str,
    entry_id: str,
    kind: str,
    part: int | None = None,
    *,
    segment: int = 0,
    ref: str = "",
) -> dict[str, Any]:
    """Message metadata for what the bot posts for a turn (``segment``: after how many
    parks; ``ref``: which approval card)."""
    payload: dict[str, Any] = {"message": message_ts, "turn": entry_id, "kind": kind}
    if part is not None:
        payload["part"] = part
    if segment:
        payload["segment"] = segment
    if ref:
        payload["ref"] = ref
    return {"event_type": EVENT_TYPE, "event_payload": payload}


def headline_tag(schedule_id: str, occurrence: float) -> dict[str, Any]:
    """Message metadata for the headline of a schedule's run (its occurrence, epoch
    seconds): found again by :func:`is_headline` when its post's outcome was never learnt."""
    moment: int | float = int(occurrence) if occurrence == int(occurrence) else occurrence
    payload = {"kind": HEADLINE, "schedule": schedule_id, "occurrence": moment}
    return {"event_type": EVENT_TYPE, "event_payload": payload}


def is_headline(message: dict[str, Any], me: Me, schedule_id: str, occurrence: float) -> bool:
    """Whether a listed message is the bot's headline of that schedule's run."""
    metadata = message.get("metadata") or {}
    payload = metadata.get("event_payload") or {}
    if metadata.get("event_type") != EVENT_TYPE or not _is_mine(message, me):
        return False
    try:
        moment = float(payload.get("occurrence", ""))
    except (TypeError, ValueError):
        return False
    return (
        payload.get("kind") == HEADLINE
        and payload.get("schedule") == schedule_id
        and moment == occurrence
    )


@dataclass(frozen=True)
class OwnMessage:
    ts: str
    payload: dict[str, Any] | None  # the tag, or None for an untagged message

    def is_for(
        self, message_ts: str, kind: str, part: int | None = None, *, segment: int = 0
    ) -> bool:
        payload = self.payload or {}
        return (
            payload.get("message") == message_ts
            and payload.get("kind") == kind
            and (part is None or payload.get("part") == part)
            and payload.get("segment", 0) == segment
        )


@dataclass(frozen=True)
class FirstMessage:
    """The turn's message as found in its thread: ``ts`` ("" when none), and whether it is
    a stream (untagged: a stream cannot be tagged when it starts)."""

    ts: str = ""
    streaming: bool = False


def first_message(
    found: list[OwnMessage], message_ts: str, segment: int = 0, after: str = ""
) -> FirstMessage:
    """Among the bot's messages after the person's message (oldest first): the one tagged as
    the first part of the answer to ``message_ts`` in ``segment``, else the bot's first
    untagged message after ``after`` (the turn's last approval card), which can only be the
    turn's stream whose start was never recorded."""
    tagged = next((m.ts for m in found if m.is_for(message_ts, "answer", 0, segment=segment)), "")
    if tagged:
        return FirstMessage(tagged)
    untagged = next((m.ts for m in found if m.payload is None and _newer(m.ts, after)), "")
    return FirstMessage(untagged, streaming=bool(untagged))


async def own_messages(
    client: AsyncWebClient, channel: str, thread_ts: str, me: Me, after_ts: str = ""
) -> list[OwnMessage]:
    """The bot's messages in a thread (oldest first), newer than ``after_ts``."""
    found: list[OwnMessage] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        response = await client.conversations_replies(
            channel=channel,
            ts=thread_ts,
            cursor=cursor,
            limit=PAGE,
            include_all_metadata=True,
        )
        for message in response.get("messages") or ():
            if not _is_mine(message, me) or not _newer(message.get("ts", ""), after_ts):
                continue
            metadata = message.get("metadata") or {}
            payload = (
                metadata.get("event_payload") if metadata.get("event_type") == EVENT_TYPE else None
            )
            found.append(OwnMessage(str(message["ts"]), payload))
        cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
        if not cursor:
            break
    return found


async def find_own(client: AsyncWebClient, turn: Turn, who_am_i: WhoAmI) -> list[OwnMessage]:
    """The bot's messages in the turn's thread after the person's message, to repair a post
    an earlier attempt made without recording it. Slack failing for now raises
    DeliveryFailed (try again later); failing for good (a missing scope, say) finds nothing,
    so the answer is still delivered, at the risk of a second copy."""
    try:
        return await own_messages(
            client, turn.channel, turn.thread_ts, await who_am_i(), turn.message_ts
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if is_temporary(exc):
            raise DeliveryFailed(error_code(exc)) from exc
        log.warning(
            "cannot look for the bot's earlier posts in %s (%s); posting without looking",
            turn.channel,
            error_code(exc),
        )
        return []


def _is_mine(message: dict[str, Any], me: Me) -> bool:
    return bool(
        (me.bot_id and message.get("bot_id") == me.bot_id)
        or (me.user_id and message.get("user") == me.user_id)
    )


def _newer(ts: str, after_ts: str) -> bool:
    if not after_ts:
        return True
    try:
        return float(ts) > float(after_ts)
    except ValueError:
        return True
