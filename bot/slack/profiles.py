"""What schedules ask Slack about a person (``users.info``): their time zone, cached in Redis
like people's names (one lookup serves every replica), and whether they have left the
workspace, asked afresh each time (a schedule's run must not go on as someone who left).

Only a definite answer counts: a lookup that fails gives no time zone (the configured one
is used) and does not say the person left (their schedule runs; the next run asks again).
"""

from __future__ import annotations

import asyncio
import logging
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.calls import safe_call
from bot.state.role_cache import RedisCache

log = logging.getLogger(__name__)

ZONE_TTL_S = 6 * 3600
NO_ZONE = "-"  # cached: Slack names no zone (or one the IANA database does not know)


class SlackProfiles:
    def __init__(self, client: AsyncWebClient, cache: RedisCache) -> None:
        self.client = client
        self.cache = cache

    async def timezone(self, team: str, user: str) -> str | None:
        """The person's own time zone as Slack has it (``tz``, an IANA name), or None:
        Slack names none, or could not be asked."""
        key = f"tz:{user}"
        try:
            cached = await self.cache.get(key)
        except Exception as exc:  # Redis away: ask Slack
            log.debug("time zone cache unreadable (%s)", type(exc).__name__)
            cached = None
        if cached is not None:
            return None if cached == NO_ZONE else cached
        response = await safe_call(self.client.users_info, user=user)
        if response is None:
            return None
        zone = known_zone((response.get("user") or {}).get("tz"))
        try:
            await self.cache.set(key, zone or NO_ZONE, ZONE_TTL_S)
        except Exception as exc:
            log.debug("time zone cache not written (%s)", type(exc).__name__)
        return zone

    async def gone(self, team: str, user: str) -> bool:
        """The person has left the workspace: users.info says ``deleted: true``. Any other
        answer, or none, is not gone (``firing.Owners``)."""
        try:
            response = await self.client.users_info(user=user)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = getattr(getattr(exc, "response", None), "get", lambda _k: None)("error")
            log.warning(
                "cannot tell whether %s is still in the workspace (%s): their schedule runs",
                user,
                error or type(exc).__name__,
            )
            return False
        return (response.get("user") or {}).get("deleted") is True


def known_zone(name: object) -> str | None:
    """``name`` when it is a time zone the IANA database knows (pure)."""
    if not isinstance(name, str) or not name:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return name
