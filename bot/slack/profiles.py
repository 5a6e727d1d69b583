"""What schedules ask Slack about a person (``users.info``): their time zone, cached in Redis
like people's names (one lookup serves every replica), and whether they have left the
workspace, asked afresh each time (a schedule's run must not go on as someone who left);
and whether they may still read the schedule's channel (``firing.Owners.in_channel``).

Who may read a channel: in a DM and a public channel, the owner (anyone in the workspace may
read a public one); in a private channel (``conversations.info`` ``is_private``, cached an
hour), its members (``conversations.members``, a few pages at most; the answer cached for
five minutes).

Only a definite answer counts: a lookup that fails gives no time zone (the configured one
is used), does not say the person left, nor that they are out of the channel (their
schedule runs; the next run asks again). A failure is never cached.
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
PRIVATE_TTL_S = 3600  # whether a channel is private
MEMBER_TTL_S = 300  # whether a person is a member of a private channel
MEMBERS_PAGE = 1000  # conversations.members' largest page
MEMBERS_PAGES = 5  # read at most, then: cannot tell


class SlackProfiles:
    def __init__(self, client: AsyncWebClient, cache: RedisCache) -> None:
        self.client = client
        self.cache = cache

    async def timezone(self, team: str, user: str) -> str | None:
        """The person's own time zone as Slack has it (``tz``, an IANA name), or None:
        Slack names none, or could not be asked."""
        key = f"tz:{user}"
        cached = await self._cached(key)
        if cached is not None:
            return None if cached == NO_ZONE else cached
        response = await safe_call(self.client.users_info, user=user)
        if response is None:
            return None
        zone = known_zone((response.get("user") or {}).get("tz"))
        await self._keep(key, zone or NO_ZONE, ZONE_TTL_S)
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

    async def in_channel(self, team: str, user: str, channel: str) -> bool:
        """The person may read ``channel``: a DM or a public channel, or a private one they
        are a member of. True when it cannot be told."""
        if channel.startswith("D"):
            return True
        if not await self._private(channel):
            return True
        key = f"member:{channel}:{user}"
        cached = await self._cached(key)
        if cached is not None:
            return cached == "1"
        member = await self._member(channel, user)
        if member is None:
            return True
        await self._keep(key, "1" if member else "0", MEMBER_TTL_S)
        return member

    async def _private(self, channel: str) -> bool:
        """Whether ``channel`` is private (a private channel or a group DM); False when it
        cannot be told."""
        key = f"private:channel:{channel}"
        cached = await self._cached(key)
        if cached is not None:
            return cached == "1"
        response = await safe_call(self.client.conversations_info, channel=channel)
        found = response.get("channel") if response is not None else None
        if not isinstance(found, dict):
            return False
        private = found.get("is_private") is True and found.get("is_im") is not True
        await self._keep(key, "1" if private else "0", PRIVATE_TTL_S)
        return private

    async def _member(self, channel: str, user: str) -> bool | None:
        """Whether ``user`` is among ``channel``'s members; None when it cannot be told (a
        call failed, or more members than :data:`MEMBERS_PAGES` pages hold)."""
        cursor = ""
        for _ in range(MEMBERS_PAGES):
            response = await safe_call(
                self.client.conversations_members,
                channel=channel,
                limit=MEMBERS_PAGE,
                **({"cursor": cursor} if cursor else {}),
            )
            if response is None:
                return None
            if user in (response.get("members") or ()):
                return True
            cursor = str((response.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor:
                return False
        log.warning("%s has too many members to tell whether %s is one", channel, user)
        return None

    async def _cached(self, key: str) -> str | None:
        try:
            return await self.cache.get(key)
        except Exception as exc:  # Redis away: ask Slack
            log.debug("profile cache unreadable (%s)", type(exc).__name__)
            return None

    async def _keep(self, key: str, value: str, ttl_s: int) -> None:
        try:
            await self.cache.set(key, value, ttl_s)
        except Exception as exc:
            log.debug("profile cache not written (%s)", type(exc).__name__)


def known_zone(name: object) -> str | None:
    """``name`` when it is a time zone the IANA database knows (pure)."""
    if not isinstance(name, str) or not name:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return name
