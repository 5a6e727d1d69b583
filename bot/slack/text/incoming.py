"""Clean a Slack message's text for the model: drop only the bot's own mention, and make
channel links, URLs and special mentions read as a person sees them."""

from __future__ import annotations

import re

_CHANNEL = re.compile(r"<#(C[A-Z0-9]+)\|([^>]*)>")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")


def clean_text(text: str, bot_user_id: str | None) -> str:
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text)
    text = _CHANNEL.sub(lambda m: f"#{m.group(2)}" if m.group(2) else f"<#{m.group(1)}>", text)
    text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    text = _SPECIAL.sub(lambda m: f"@{m.group(1)}", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def mentions(text: str, user_id: str | None) -> bool:
    return bool(user_id) and f"<@{user_id}" in text
