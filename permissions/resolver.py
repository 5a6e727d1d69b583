"""Who holds which role: config user IDs, user-group membership, workspace admin status, and
grants made by admins in Slack. Someone matching none holds the default role.

Shared channels fail closed: this workspace's user groups and admin status count only for a
person Slack's directory says is of this workspace (users.info's team, or its Enterprise Grid
organisation). Someone the event names as from another workspace or names no workspace for,
whom the directory places elsewhere, or whom it cannot place (Slack not answering) is an
outside person: the config's user IDs and the grants only.

The answer is cached (in Redis, by the caller's cache) for a short time, so a usual turn asks
Slack nothing. When Slack cannot be asked, the Slack-based sources are skipped and logged:
a person keeps what the config and the grants give them, else the default role; they never
get more than that. A lookup that started before a grant or revoke never caches its answer
after it (the cache's generation, permissions/lookups.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from permissions.config import RoleConfig
from permissions.lookups import Cache, Cached, Directory, Grants, Standing
from permissions.sources import CONFIG, DEFAULT, WORKSPACE_ADMIN, HeldRole, granted_by, user_group

log = logging.getLogger(__name__)

CACHE_TTL_S = 300
DEGRADED_CACHE_TTL_S = 30  # after a Slack failure, ask again soon

OUTSIDE = Standing(member=False, admin=False)


class RoleResolver:
    def __init__(
        self,
        roles: Mapping[str, RoleConfig],
        *,
        directory: Directory | None = None,
        grants: Grants | None = None,
        cache: Cache | None = None,
    ) -> None:
        self.roles = roles
        self.directory = directory
        self.grants = grants
        self.cache = cache
        self.default = next((name for name, role in roles.items() if role.default), None)
        # Only user groups and workspace admin status need Slack's directory.
        self.asks_slack = any(
            role.workspace_admins or any(m.startswith("S") for m in role.members)
            for role in roles.values()
        )

    async def resolve(
        self, team: str, user: str, *, external: bool = False, cached: Cached | None = None
    ) -> list[HeldRole]:
        """The roles ``user`` holds in ``team``. ``external``: the surface (event, click,
        command) names another workspace as the person's, or none; only the config's user
        IDs and admins' grants count. Otherwise the directory decides whether they are of this
        workspace; if it says not, or cannot say, they count as ``external`` too.
        ``cached``: what the cache holds, read by the caller just now (with the policy's
        other reads, permissions/policy.py); else it is read here."""
        if cached is None:
            cached = Cached(None, "")
            if self.cache is not None:
                cached = await self.cache.read(team, user, external)  # the generation: first
        if cached.value is not None:
            return [HeldRole(**item) for item in json.loads(cached.value)]
        held, complete = await self._resolve(team, user, external)
        if self.cache is not None:
            ttl = CACHE_TTL_S if complete else DEGRADED_CACHE_TTL_S
            value = json.dumps([h.to_json() for h in held])
            if not await self.cache.write(team, user, external, value, ttl, cached.generation):
                log.info("the roles of %s changed during their lookup; not caching it", user)
        return held

    async def forget(self, team: str, user: str) -> None:
        """Drop the cached answers, and keep lookups under way from writing theirs."""
        if self.cache is not None:
            await self.cache.forget(team, user)

    async def _resolve(self, team: str, user: str, external: bool) -> tuple[list[HeldRole], bool]:
        standing, complete = OUTSIDE, True
        if not external and self.asks_slack and self.directory is not None:
            standing, complete = await self._standing(team, user)
        held: list[HeldRole] = []
        for name, role in self.roles.items():
            if user in role.members:
                held.append(HeldRole(name, CONFIG))
            if not standing.member:
                continue
            for group in (m for m in role.members if m.startswith("S")):
                try:
                    if self.directory is not None and user in await self.directory.group_members(
                        team, group
                    ):
                        held.append(HeldRole(name, user_group(group)))
                except Exception as exc:
                    complete = False
                    log.warning(
                        "could not read user group %s (%s); skipping it for %s",
                        group,
                        _why(exc),
                        user,
                    )
        if standing.member and standing.admin:
            held.extend(
                HeldRole(name, WORKSPACE_ADMIN)
                for name, role in self.roles.items()
                if role.workspace_admins
            )
        if self.grants is not None:
            for grant in await self.grants.of(team, user):
                if grant.role in self.roles:
                    held.append(HeldRole(grant.role, granted_by(grant.by)))
                else:
                    log.warning("ignoring a grant of unknown role %r to %s", grant.role, user)
        if not held and self.default is not None:
            held.append(HeldRole(self.default, DEFAULT))
        return held, complete

    async def _standing(self, team: str, user: str) -> tuple[Standing, bool]:
        """Whether ``user`` is of this workspace, and an admin of it; outside when the
        directory cannot say (and then the answer is incomplete)."""
        assert self.directory is not None
        try:
            standing = await self.directory.standing(team, user)
        except Exception as exc:
            log.warning(
                "could not ask Slack who %s is (%s); counting them as from another workspace",
                user,
                _why(exc),
            )
            return OUTSIDE, False
        if not standing.member:
            log.info("%s is not of this workspace (users.info); config and grants only", user)
        return standing, True


def _why(exc: Exception) -> str:
    """A short reason: Slack's error code when there is one."""
    response = getattr(exc, "response", None)
    data = getattr(response, "data", None)
    if isinstance(data, dict) and data.get("error"):
        return str(data["error"])
    return type(exc).__name__
