"""Whether a channel is shared with another organisation (Slack Connect), for the channel's
settings (the ``external`` entry of ``channels:``).

The event's own flag (the envelope's ``is_ext_shared_channel``, carried on the turn) wins when
it is there. Without it (a turn queued before it was carried) a channel is looked up with
``conversations.info`` (``channel.is_ext_shared``), the answer cached in Redis for an hour so
one lookup serves every replica. A lookup that fails counts as shared: the narrower settings
apply (fail closed), and the failure is not cached, so the next turn asks again. A direct
message without the flag is not looked up: it is no channel the ``external`` entry is for.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.calls import safe_call
from bot.slack.inbox.names import Cache

log = logging.getLogger(__name__)

SHARED_TTL_S = 3600


class SharedChannels:
    def __init__(self, client: AsyncWebClient, cache: Cache) -> None:
        self.client = client
        self.cache = cache

    async def external(self, channel: str, said: bool | None) -> bool:
        """Whether ``channel`` is shared with another organisation; ``said``: what the event
        said (None: it did not)."""
        if said is not None:
            return said
        if channel.startswith("D"):
            return False
        key = f"shared:channel:{channel}"
        try:
            cached = await self.cache.get(key)
        except Exception as exc:  # Redis away: ask Slack, the turn goes on
            log.debug("shared-channel cache unreadable (%s)", type(exc).__name__)
            cached = None
        if cached is not None:
            return cached == "1"
        response = await safe_call(self.client.conversations_info, channel=channel)
        found = response.get("channel") if response is not None else None
        if not isinstance(found, dict):
            log.warning("whether %s is shared is unknown: taken as shared", channel)
            return True
        shared = bool(found.get("is_ext_shared"))
        try:
            await self.cache.set(key, "1" if shared else "0", SHARED_TTL_S)
        except Exception as exc:
            log.debug("shared-channel cache not written (%s)", type(exc).__name__)
        return shared
