"""Fakes for the firing protocol's ports: headlines kept in a list (found by their tag, as
Slack's message metadata would be), owners who may have left, an enqueue that counts its
calls on the real queue, and the death of a holder mid-step; and the store's clock (Redis's
plus an offset) set to stand at a chosen moment."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bot.schedules.firing import Enqueue
from bot.state.schedules import Schedule, ScheduleStore
from bot.turn.model import Turn


async def stand_at(store: ScheduleStore, moment: float) -> None:
    """Set the store's clock (Redis's ``TIME`` plus its offset) to read ``moment`` now: it
    runs on from there as Redis's does."""
    seconds, micros = await store.client.time()
    store.clock_offset_s = moment - (int(seconds) + int(micros) / 1e6)


class HolderDied(BaseException):
    """The holder's process died here: nothing after this runs (not an ``Exception``, so no
    step of the protocol handles it)."""


@dataclass(frozen=True)
class Post:
    schedule: str
    occurrence: float
    missed: int
    ts: str


@dataclass
class FakeHeadlines:
    posts: list[Post] = field(default_factory=list)
    finds: int = 0
    failure: Exception | None = None  # post raises it (Slack refused)
    failures_in: dict[str, Exception] = field(default_factory=dict)  # by channel, the same
    die_after_post: bool = False  # the post lands, then the holder dies

    async def find(self, schedule: Schedule, occurrence: float) -> str | None:
        self.finds += 1
        await asyncio.sleep(0)
        return next(
            (p.ts for p in self.posts if (p.schedule, p.occurrence) == (schedule.id, occurrence)),
            None,
        )

    async def post(self, schedule: Schedule, occurrence: float, missed: int) -> str:
        await asyncio.sleep(0)  # others run meanwhile, as over the network
        if self.failure is not None:
            raise self.failure
        if schedule.channel in self.failures_in:
            raise self.failures_in[schedule.channel]
        ts = f"{1_780_000_000 + len(self.posts)}.000100"
        self.posts.append(Post(schedule.id, occurrence, missed, ts))
        if self.die_after_post:
            self.die_after_post = False
            raise HolderDied
        return ts


@dataclass
class FakeOwners:
    left: set[str] = field(default_factory=set)
    outside: set[tuple[str, str]] = field(default_factory=set)  # (user, channel) not a member
    failure: Exception | None = None
    asked: int = 0

    async def gone(self, team: str, user: str) -> bool:
        self.asked += 1
        await asyncio.sleep(0)
        if self.failure is not None:
            raise self.failure
        return user in self.left

    async def in_channel(self, team: str, user: str, channel: str) -> bool:
        await asyncio.sleep(0)
        return (user, channel) not in self.outside


@dataclass
class CountingEnqueue:
    """The real queue's enqueue, counted; ``die_after`` the next call: the holder dies once
    the turn is queued."""

    enqueue: Enqueue
    turns: list[Turn] = field(default_factory=list)
    entry_ids: list[str | None] = field(default_factory=list)
    die_after: bool = False

    async def __call__(self, turn: Turn) -> str | None:
        entry_id = await self.enqueue(turn)
        self.turns.append(turn)
        self.entry_ids.append(entry_id)
        if self.die_after:
            self.die_after = False
            raise HolderDied
        return entry_id
