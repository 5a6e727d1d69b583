"""Who the bot answers, what it only hears, and what it ignores: decided from a Slack
message event alone (pure).

A message becomes a :class:`~bot.turn.model.Turn` to answer, an :class:`Aside` (a reply in
a channel thread that is not for the bot but is kept as context where the bot takes part),
or :class:`Ignored` with the reason. Follow-ups still need the ingress
(``bot/slack/inbound/ingress.py``) to check that the bot is in the thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.config.schema import SlackConfig
from bot.slack.text import addressed_to_others, clean_text, mentions
from bot.state.redis.thread_key import ThreadKey
from bot.turn.message import SLACKBOT, SlackMessage
from bot.turn.model import Turn, TurnKind

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


def shared_channel(body: Any) -> bool | None:
    """The events envelope's ``is_ext_shared_channel`` (the channel is shared with another
    organisation); None when the envelope does not say (pure)."""
    value = body.get("is_ext_shared_channel") if isinstance(body, dict) else None
    return value if isinstance(value, bool) else None


def classify(
    event: dict[str, Any],
    event_id: str,
    me: Identity,
    settings: SlackConfig,
    *,
    shared: bool | None = None,
) -> Turn | Aside | Ignored:
    """A turn for ``event``, an aside to keep, or why it is ignored. Follow-ups are marked
    :attr:`TurnKind.FOLLOWUP` and still need :meth:`Ingress.accept` to check the bot is in the
    thread. ``shared``: the envelope's ``is_ext_shared_channel`` (None when it had none),
    carried on the turn."""
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
        turn_kind = TurnKind.MENTION
    elif channel_type == "im":
        turn_kind = TurnKind.ASSISTANT if thread_ts else TurnKind.DM
    elif mentions(raw, me.bot_user_id):
        return Ignored("a mention: the app_mention event carries it", quiet=True)
    elif thread_ts and addressed_to_others(raw, me.bot_user_id):
        return Aside(ThreadKey(team, channel, thread_ts), message, event_id, ADDRESSED_TO_OTHERS)
    elif thread_ts and settings.follow_up_in_threads:
        turn_kind = TurnKind.FOLLOWUP
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
        message=message,
        shared=shared,
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
