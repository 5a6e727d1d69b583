"""Who holds which role: config user IDs, user-group membership, workspace admin status, and
grants made by admins in Slack. Someone matching none holds the default role.

The answer is cached (in Redis, by the caller's cache) for a short time, so a usual turn asks
Slack nothing. When Slack cannot be asked, the Slack-based sources are skipped and logged:
a person keeps what the config and the grants give them, else the default role; they never
get more than that.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from permissions.config import RoleConfig
from permissions.sources import CONFIG, DEFAULT, WORKSPACE_ADMIN, HeldRole, granted_by, user_group

log = logging.getLogger(__name__)

CACHE_TTL_S = 300
DEGRADED_CACHE_TTL_S = 30  # after a Slack failure, ask again soon


class Directory(Protocol):
    """What the resolver asks Slack."""

    async def is_workspace_admin(self, team: str, user: str) -> bool: ...

    async def group_members(self, team: str, group: str) -> set[str]: ...


class GrantLike(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def by(self) -> str: ...


class Grants(Protocol):
    async def of(self, team: str, user: str) -> Sequence[GrantLike]: ...


class Cache(Protocol):
    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str, ttl_s: int) -> None: ...

    async def delete(self, key: str) -> None: ...


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

    async def resolve(self, team: str, user: str, *, external: bool = False) -> list[HeldRole]:
        """The roles ``user`` holds in ``team``. ``external``: the person belongs to another
        workspace (Slack Connect); only the config's user IDs and admins' grants count, never
        this workspace's user groups or admin status (nor their own workspace's)."""
        key = f"roles:{team}:{user}" + (":external" if external else "")
        if self.cache is not None:
            cached = await self.cache.get(key)
            if cached is not None:
                return [HeldRole(**item) for item in json.loads(cached)]
        held, complete = await self._resolve(team, user, external)
        if self.cache is not None:
            ttl = CACHE_TTL_S if complete else DEGRADED_CACHE_TTL_S
            await self.cache.set(key, json.dumps([h.to_json() for h in held]), ttl)
        return held

    async def forget(self, team: str, user: str) -> None:
        """Drop the cached answers (after a grant or revoke)."""
        if self.cache is not None:
            await self.cache.delete(f"roles:{team}:{user}")
            await self.cache.delete(f"roles:{team}:{user}:external")

    async def _resolve(self, team: str, user: str, external: bool) -> tuple[list[HeldRole], bool]:
        held: list[HeldRole] = []
        complete = True
        for name, role in self.roles.items():
            if user in role.members:
                held.append(HeldRole(name, CONFIG))
            if external:
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
        if (
            not external
            and self.directory is not None
            and any(r.workspace_admins for r in self.roles.values())
        ):
            try:
                if await self.directory.is_workspace_admin(team, user):
                    held.extend(
                        HeldRole(name, WORKSPACE_ADMIN)
                        for name, role in self.roles.items()
                        if role.workspace_admins
                    )
            except Exception as exc:
                complete = False
                log.warning(
                    "could not ask Slack whether %s is a workspace admin (%s); not counting it",
                    user,
                    _why(exc),
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


def _why(exc: Exception) -> str:
    """A short reason: Slack's error code when there is one."""
    response = getattr(exc, "response", None)
    data = getattr(response, "data", None)
    if isinstance(data, dict) and data.get("error"):
        return str(data["error"])
    return type(exc).__name__
