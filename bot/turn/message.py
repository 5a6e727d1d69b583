"""One Slack message, reduced to what the model is given (pure).

A message comes from an event or from ``conversations.replies``; both share Slack's message
shape (https://docs.slack.dev/reference/objects/message-object). What is kept: who wrote it,
its raw text (codes are made readable later, with names looked up), its files' metadata and
the messages it forwards (attachments with ``is_share``). The compact dict form travels in
the turn through the queue, so a turn carries no blocks and no thumbnails it does not need.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

SLACKBOT = "USLACKBOT"

FILE_FIELDS = (
    "id",
    "name",
    "title",
    "mimetype",
    "filetype",
    "pretty_type",
    "size",
    "mode",
    "url_private",
    "url_private_download",
    "thumb_1024",
    "thumb_720",
    "thumb_480",
    "file_access",
)


@dataclass(frozen=True)
class FileRef:
    """A file as Slack describes it (https://docs.slack.dev/reference/objects/file-object)."""

    id: str = ""
    name: str = ""
    title: str = ""
    mimetype: str = ""
    filetype: str = ""
    pretty_type: str = ""
    size: int = 0
    mode: str = ""
    url_private: str = ""
    url_private_download: str = ""
    thumb_1024: str = ""
    thumb_720: str = ""
    thumb_480: str = ""
    file_access: str = ""  # "check_file_info" (Slack Connect): only the id is given

    @classmethod
    def of(cls, data: dict[str, Any]) -> FileRef:
        kept = {name: data[name] for name in FILE_FIELDS if data.get(name) is not None}
        size = kept.pop("size", 0)
        return cls(
            size=size if isinstance(size, int) else 0, **{k: str(v) for k, v in kept.items()}
        )

    @property
    def label(self) -> str:
        return self.name or self.title or self.id or "a file"

    @property
    def needs_info(self) -> bool:
        """Slack gave only the id: ``files.info`` tells the rest."""
        return self.file_access == "check_file_info" or not (self.name or self.url_private)


@dataclass(frozen=True)
class Forward:
    """A message shared into this one (an attachment with ``is_share``)."""

    text: str = ""
    author_id: str = ""
    author_name: str = ""
    channel_id: str = ""
    channel_name: str = ""
    ts: str = ""
    from_url: str = ""
    files: tuple[FileRef, ...] = ()

    @classmethod
    def of(cls, attachment: dict[str, Any]) -> Forward:
        text = str(attachment.get("text") or "")
        if not text:
            for block in attachment.get("message_blocks") or ():
                inner = (block or {}).get("message") or {}
                text = str(inner.get("text") or "")
                if text:
                    break
        return cls(
            text=text or str(attachment.get("fallback") or ""),
            author_id=str(attachment.get("author_id") or ""),
            author_name=str(
                attachment.get("author_name") or attachment.get("author_subname") or ""
            ),
            channel_id=str(attachment.get("channel_id") or ""),
            channel_name=str(attachment.get("channel_name") or ""),
            ts=str(attachment.get("ts") or ""),
            from_url=str(attachment.get("from_url") or ""),
            files=tuple(
                FileRef.of(f) for f in attachment.get("files") or () if isinstance(f, dict)
            ),
        )


@dataclass(frozen=True)
class SlackMessage:
    ts: str = ""
    user: str = ""  # U..., or a bot's B... when no user wrote it
    bot_name: str = ""  # for other bots' messages
    text: str = ""  # raw, with Slack's codes
    files: tuple[FileRef, ...] = ()
    forwards: tuple[Forward, ...] = ()
    user_team: str = ""  # the author's own workspace (Slack Connect: not the bot's)
    subtype: str = ""

    @classmethod
    def of(cls, data: dict[str, Any]) -> SlackMessage:
        """From an event or a listed message."""
        profile = data.get("bot_profile") or {}
        return cls(
            ts=str(data.get("ts") or ""),
            user=str(data.get("user") or data.get("bot_id") or ""),
            bot_name=str(profile.get("name") or data.get("username") or "")
            if data.get("bot_id")
            else "",
            text=str(data.get("text") or ""),
            files=tuple(FileRef.of(f) for f in data.get("files") or () if isinstance(f, dict)),
            forwards=tuple(
                Forward.of(a)
                for a in data.get("attachments") or ()
                if isinstance(a, dict) and (a.get("is_share") or a.get("is_msg_unfurl"))
            ),
            user_team=str(
                data.get("user_team") or data.get("team") or data.get("source_team") or ""
            ),
            subtype=str(data.get("subtype") or ""),
        )

    @property
    def has_content(self) -> bool:
        return bool(self.files or self.forwards)

    def to_dict(self) -> dict[str, Any]:
        """The compact form kept in the turn (empty fields left out)."""
        compacted = _compact(self)
        assert isinstance(compacted, dict)
        return compacted

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SlackMessage:
        """The compact form back (fields it does not know are left out)."""
        forwards = tuple(
            Forward(**{**_known(Forward, f), "files": _files(f)})
            for f in data.get("forwards") or ()
        )
        return cls(**{**_known(cls, data), "files": _files(data), "forwards": forwards})


def _compact(value: Any) -> Any:
    """``value`` (a message, a file, a forward) as a dict without empty fields, at every
    level; tuples as lists (JSON's form). Read field by field: ``dataclasses.asdict`` deep-
    copies every value first, a tenth of an enqueue's CPU."""
    if isinstance(value, (SlackMessage, Forward, FileRef)):
        pairs = ((name, getattr(value, name)) for name in value.__dataclass_fields__)
        return {k: _compact(v) for k, v in pairs if v not in ("", (), [], 0, None)}
    if isinstance(value, (list, tuple)):
        return [_compact(v) for v in value]
    return value


def _known(kind: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    return {k: v for k, v in data.items() if k in names}


def _files(data: dict[str, Any]) -> tuple[FileRef, ...]:
    return tuple(FileRef(**_known(FileRef, f)) for f in data.get("files") or ())
