"""What the role resolver asks Slack: who a person is (users.info, against the bot's own
workspace from auth.test) and user-group members."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.identity import BotIdentity
from bot.state.role_cache import RedisCache
from permissions.lookups import Standing

GROUP_TTL_S = 300
ADMIN_FLAGS = ("is_admin", "is_owner", "is_primary_owner")


class SlackDirectory:
    def __init__(self, client: AsyncWebClient, cache: RedisCache, identity: BotIdentity) -> None:
        self.client = client
        self.cache = cache
        self.identity = identity

    async def standing(self, team: str, user: str) -> Standing:
        """users.info, compared with auth.test; raises when Slack cannot be asked (the
        resolver then counts the person as from another workspace)."""
        me = await self.identity.load()
        response = await self.client.users_info(user=user)
        return standing_of(
            response["user"], str(me.get("team_id") or ""), str(me.get("enterprise_id") or "")
        )

    async def group_members(self, team: str, group: str) -> set[str]:
        key = f"usergroup:{team}:{group}"
        cached = await self.cache.get(key)
        if cached is not None:
            return set(json.loads(cached))
        response = await self.client.usergroups_users_list(usergroup=group, team_id=team)
        users = [str(u) for u in response.get("users") or []]
        await self.cache.set(key, json.dumps(users), GROUP_TTL_S)
        return set(users)


def standing_of(profile: Mapping[str, Any], team: str, enterprise: str) -> Standing:
    """A users.info ``user`` as the bot's workspace ``team`` (of Enterprise Grid org
    ``enterprise``, "" when none) sees them (pure). Of this workspace: their ``team_id`` is
    ``team``, or on Grid their organisation is ``enterprise``. Admin: of this workspace by
    its flags, or of the organisation by ``enterprise_user``'s; a person of another
    workspace, or one Slack names no workspace for, is never either."""
    org = profile.get("enterprise_user") or {}
    their_team = str(profile.get("team_id") or "")
    their_org = str(profile.get("enterprise_id") or org.get("enterprise_id") or "")
    same_team = bool(team) and their_team == team
    same_org = bool(enterprise) and their_org == enterprise
    admin = (same_team and any(profile.get(f) for f in ADMIN_FLAGS)) or (
        same_org and any(org.get(f) for f in ADMIN_FLAGS)
    )
    return Standing(member=same_team or same_org, admin=bool(admin))
