"""What the role resolver asks of the world, as protocols: the workspace's directory (Slack),
the grants, and the cache of answers (Redis). permissions/ knows neither Slack nor Redis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Standing:
    """What the workspace's directory says of a person."""

    member: bool  # of the bot's workspace (on Enterprise Grid: its organisation)
    admin: bool  # an admin or owner of it; never true when ``member`` is not


class Directory(Protocol):
    """What the resolver asks Slack."""

    async def standing(self, team: str, user: str) -> Standing: ...

    async def group_members(self, team: str, group: str) -> set[str]: ...


class GrantLike(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def by(self) -> str: ...


class Grants(Protocol):
    async def of(self, team: str, user: str) -> Sequence[GrantLike]: ...


@dataclass(frozen=True)
class Cached:
    """A cached answer (None: none), and the person's generation when it was read."""

    value: str | None
    generation: str


class Cache(Protocol):
    """Resolved roles, kept briefly, per person and per ``external``.

    Each person has a generation that a grant, a revoke or :meth:`forget` moves on in the
    same step as its change (and drops the cached answers then). :meth:`write` stores an
    answer only while the generation :meth:`read` returned is still current, checked in the
    same step as the write: a lookup that read the grants before a change never writes its
    answer back after it."""

    async def read(self, team: str, user: str, external: bool) -> Cached: ...

    async def write(
        self, team: str, user: str, external: bool, value: str, ttl_s: int, generation: str
    ) -> bool: ...

    async def forget(self, team: str, user: str) -> None: ...
