"""People's and channels' names for the model: ``users.info`` and ``conversations.info``,
cached in Redis (so one lookup serves every replica) and briefly in the process.

A lookup that fails is logged and leaves the id without a name; the turn goes on. A failed id
is not asked again for a minute.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.calls import safe_call

log = logging.getLogger(__name__)

NAME_TTL_S = 6 * 3600
FAILED_RETRY_S = 60.0


class Cache(Protocol):
    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str, ttl_s: int) -> None: ...


def display_name(user: dict[str, Any]) -> str:
    """What Slack shows for a person: their display name, else their full name."""
    profile = user.get("profile") or {}
    for name in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if name:
            return str(name)
    return ""


class SlackNames:
    def __init__(self, client: AsyncWebClient, cache: Cache) -> None:
        self.client = client
        self.cache = cache
        self._failed: dict[str, float] = {}  # cache key -> when the lookup failed

    async def users(self, ids: Iterable[str]) -> dict[str, str]:
        """Display names of ``ids`` (those found)."""
        return await self._names("user", ids)

    async def channels(self, ids: Iterable[str]) -> dict[str, str]:
        """Channel names of ``ids`` (those found; a DM has none)."""
        return await self._names("channel", ids)

    async def _names(self, kind: str, ids: Iterable[str]) -> dict[str, str]:
        unique = list(dict.fromkeys(i for i in ids if i))
        found = await asyncio.gather(*(self._name(kind, i) for i in unique))
        return {i: name for i, name in zip(unique, found, strict=True) if name}

    async def _name(self, kind: str, id_: str) -> str:
        key = f"name:{kind}:{id_}"
        failed = self._failed.get(key)
        if failed is not None and time.monotonic() - failed < FAILED_RETRY_S:
            return ""
        try:
            cached = await self.cache.get(key)
        except Exception as exc:  # Redis away: ask Slack, the turn goes on
            log.debug("name cache unreadable (%s)", type(exc).__name__)
            cached = None
        if cached is not None:
            return cached
        name = await self._ask(kind, id_)
        if name is None:
            self._failed[key] = time.monotonic()
            return ""
        try:
            await self.cache.set(key, name, NAME_TTL_S)
        except Exception as exc:
            log.debug("name cache not written (%s)", type(exc).__name__)
        return name

    async def _ask(self, kind: str, id_: str) -> str | None:
        if kind == "user":
            response = await safe_call(self.client.users_info, user=id_)
            return display_name(response["user"]) if response is not None else None
        response = await safe_call(self.client.conversations_info, channel=id_)
        if response is None:
            return None
        return str((response.get("channel") or {}).get("name") or "")
