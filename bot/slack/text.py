"""Slack's text codes made readable for the model (pure).

Slack writes people, channels, user groups, dates and links as ``<...>`` codes
(https://docs.slack.dev/messaging/formatting-message-text). The model reads them as a person
sees them:

- ``<@U123>`` keeps its form, so the model can mention the person back, with the display
  name alongside when known: ``<@U123> (Ana)``; the bot's own mention is dropped;
- ``<#C123|general>`` and ``<#C123>`` read ``#general`` (the name looked up when not given);
- ``<!subteam^S123|@oncall>`` reads ``@oncall``; ``<!date^1392734382^{date}|Feb 18>`` reads
  its fallback; ``<!here>`` reads ``@here``;
- ``<https://x.com|label>`` reads ``label (https://x.com)``;
- ``&lt;`` ``&gt;`` ``&amp;`` are unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_CODE = re.compile(r"<([^<>]*)>")
_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_CHANNEL = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|[^>]*)?>")
_SUBTEAM = re.compile(r"<!subteam\^([A-Z0-9]+)(?:\|[^>]*)?>")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
NO_NAMES: Mapping[str, str] = {}


def readable(
    text: str,
    bot_user_id: str | None = None,
    *,
    users: Mapping[str, str] = NO_NAMES,
    channels: Mapping[str, str] = NO_NAMES,
) -> str:
    """``text`` with every Slack code made readable; ``users`` and ``channels`` map ids to
    names looked up elsewhere (a label inside the code is used when there is none)."""

    def one(match: re.Match[str]) -> str:
        return _render(match.group(1), bot_user_id, users, channels)

    text = _CODE.sub(one, text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def clean_text(text: str, bot_user_id: str | None) -> str:
    """What a message says without looking anything up (at ingress: is it empty?)."""
    return readable(text, bot_user_id)


def _render(
    code: str, me: str | None, users: Mapping[str, str], channels: Mapping[str, str]
) -> str:
    body, _, label = code.partition("|")
    if body.startswith("@"):
        user = body[1:]
        if user == me:
            return ""
        name = users.get(user) or label
        return f"<@{user}> ({name})" if name else f"<@{user}>"
    if body.startswith("#"):
        channel = body[1:]
        name = channels.get(channel) or label
        return f"#{name}" if name else f"<#{channel}>"
    if body.startswith("!subteam^"):
        return label or f"@{body.removeprefix('!subteam^')}"
    if body.startswith("!date^"):
        return label or body
    if body.startswith("!"):
        special = body[1:]
        return f"@{special}" if special in ("here", "channel", "everyone") else label or special
    if _SCHEME.match(body):
        bare = body.split(":", 1)[1] if body.startswith(("mailto:", "tel:")) else body
        return f"{label} ({body})" if label and label not in (body, bare) else bare
    return f"<{code}>"  # not a code: a person's own angle brackets


def mentions(text: str, user_id: str | None) -> bool:
    return bool(user_id) and f"<@{user_id}" in text


def mentioned_users(text: str) -> list[str]:
    """User ids mentioned in ``text``, in order, each once."""
    return list(dict.fromkeys(_USER.findall(text)))


def mentioned_channels(text: str) -> list[str]:
    return list(dict.fromkeys(_CHANNEL.findall(text)))


def addressed_to_others(text: str, bot_user_id: str | None) -> bool:
    """Whether ``text`` mentions a person or user group, and not the bot."""
    if mentions(text, bot_user_id):
        return False
    others = [u for u in mentioned_users(text) if u != bot_user_id]
    return bool(others or _SUBTEAM.search(text))
