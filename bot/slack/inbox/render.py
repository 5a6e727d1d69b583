"""A Slack message as the model reads it (pure): who wrote it, its text with every code made
readable, its files and the messages it forwards.

Who wrote a message is written the way Slack mentions people, ``<@U123> (Ana)``, so the model
can mention them back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.slack.identity import Me
from bot.slack.inbox.files import kind_words, size_words
from bot.slack.text import mentioned_channels, mentioned_users, readable
from bot.turn.message import FileRef, Forward, SlackMessage

BARE_MENTION_IN_THREAD = (
    "(mentioned you without a message: read this thread and answer what it needs)"
)
BARE_MENTION = "(mentioned you without a message)"
SELF = "you (the assistant)"


@dataclass(frozen=True)
class Names:
    users: Mapping[str, str] = field(default_factory=dict)
    channels: Mapping[str, str] = field(default_factory=dict)


def wanted_names(
    messages: Iterable[SlackMessage], *, authors: bool = True
) -> tuple[set[str], set[str]]:
    """The user and channel ids whose names the messages need (their authors' too when
    they are shown)."""
    users: set[str] = set()
    channels: set[str] = set()
    for message in messages:
        if authors and message.user.startswith(("U", "W")):
            users.add(message.user)
        texts = [message.text, *(f.text for f in message.forwards)]
        for text in texts:
            users.update(mentioned_users(text))
            channels.update(mentioned_channels(text))
        for forward in message.forwards:
            if forward.author_id.startswith(("U", "W")):
                users.add(forward.author_id)
            if forward.channel_id and not forward.channel_name:
                channels.add(forward.channel_id)
    return users, channels


def author(message: SlackMessage, names: Names, me: Me) -> str:
    if message.user and message.user in (me.user_id, me.bot_id):
        return SELF
    if message.bot_name:
        return f"{message.bot_name} (a bot)"
    return person(message.user, names)


def person(user: str, names: Names) -> str:
    if not user:
        return "someone"
    name = names.users.get(user)
    return f"<@{user}> ({name})" if name else f"<@{user}>"


def file_line(file: FileRef, note: str = "") -> str:
    details = [kind_words(file)]
    if file.size:
        details.append(size_words(file.size))
    line = f"[file: {file.label} — {', '.join(details)}"
    return f"{line}; {note}]" if note else f"{line}]"


def forward_text(forward: Forward, names: Names, me: Me) -> str:
    who = person(forward.author_id, names) if forward.author_id else forward.author_name
    where = names.channels.get(forward.channel_id) or forward.channel_name
    head = "Forwarded message"
    if who:
        head += f" from {who}"
    if where:
        head += f" in #{where}"
    body = readable(forward.text, me.user_id or None, users=names.users, channels=names.channels)
    lines = [f"{head}:"] + [f"> {line}" for line in body.splitlines() or [""]]
    lines += [f"> {file_line(f)}" for f in forward.files]
    return "\n".join(lines)


def body(
    message: SlackMessage,
    names: Names,
    me: Me,
    file_notes: Callable[[FileRef], str] = lambda _file: "",
) -> str:
    """What the message says: text, then each file and forward on lines of their own."""
    parts = [readable(message.text, me.user_id or None, users=names.users, channels=names.channels)]
    parts += [file_line(f, file_notes(f)) for f in message.files]
    parts += [forward_text(f, names, me) for f in message.forwards]
    return "\n".join(p for p in parts if p)


def line(message: SlackMessage, names: Names, me: Me) -> str:
    """One message of a thread: ``<@U1> (Ana): text``."""
    said = body(message, names, me) or "(no text)"
    return f"{author(message, names, me)}: {said}"


def newest_within(lines: Sequence[str], budget_tokens: int, tokens: Callable[[str], int]) -> int:
    """How many of the newest ``lines`` fit ``budget_tokens``."""
    used = 0
    kept = 0
    for text in reversed(lines):
        cost = tokens(text) + 1
        if used + cost > budget_tokens:
            break
        used += cost
        kept += 1
    return kept


def earlier_block(lines: Sequence[str], left_out: int) -> str:
    """The thread before the bot was mentioned in it."""
    head = "Earlier messages in this thread, before you were mentioned (oldest first"
    head += f"; {left_out} older ones left out):" if left_out else "):"
    return "\n".join([head, *lines, "(end of earlier messages)"])


def asides_block(lines: Sequence[str]) -> str:
    """Replies the bot heard in the thread without being asked."""
    head = "Replies in this thread since your last answer, between other people (not to you):"
    return "\n".join([head, *lines, "(end of those replies)"])


def file_contents(file: FileRef, text: str, truncated: bool, limit: int) -> str:
    note = f" (the first {limit:,} characters)" if truncated else ""
    return f'<file name="{file.label}"{note}>\n{text}\n</file>'
