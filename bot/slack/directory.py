"""What the role resolver asks Slack: workspace admin status and user-group members."""

from __future__ import annotations

import json

from slack_sdk.web.async_client import AsyncWebClient

from bot.state.role_cache import RedisCache

GROUP_TTL_S = 300


class SlackDirectory:
    def __init__(self, client: AsyncWebClient, cache: RedisCache) -> None:
        self.client = client
        self.cache = cache

    async def is_workspace_admin(self, team: str, user: str) -> bool:
        """users.info; raises when Slack cannot be asked (the resolver then skips it)."""
        response = await self.client.users_info(user=user)
        profile = response["user"]
        return bool(
            profile.get("is_admin") or profile.get("is_owner") or profile.get("is_primary_owner")
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
