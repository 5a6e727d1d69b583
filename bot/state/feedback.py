"""Feedback on answers (Slack's thumbs up / down): each click with its turn, model, tools and
person, counted per day (UTC), the latest kept for reading; and an audit entry, all in one
transaction. One vote per person per answer: clicking again changes nothing, changing one's
mind moves the count."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from redis.exceptions import WatchError

from bot.state.audit import AuditEntry, AuditKind, AuditLog
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys

KEEP_S = 90 * 24 * 3600
MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Feedback:
    verdict: str  # "up" or "down"
    user: str
    team: str
    channel: str
    thread_ts: str
    message_ts: str  # the answer's message
    turn: str  # the turn's entry id
    model: str
    tools: list[str] = field(default_factory=list)
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class DayCount:
    day: str
    up: int
    down: int


class FeedbackLog:
    def __init__(self, client: Redis, keys: Keys, audit: AuditLog) -> None:
        self.client = client
        self.keys = keys
        self.audit = audit

    async def add(self, feedback: Feedback) -> bool:
        """Keep a click. One vote per person per answer: a repeated click changes nothing
        (False); a changed mind moves the count from the old verdict to the new one."""
        day = datetime.fromtimestamp(feedback.at, UTC).date().isoformat()
        votes = self.keys.feedback_votes(feedback.team, feedback.channel, feedback.message_ts)
        async with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(votes)
                    old = await pipe.hget(votes, feedback.user)
                    old_day, _, old_verdict = str(old or "").partition(" ")
                    if old_verdict == feedback.verdict:
                        return False
                    pipe.multi()
                    if old_verdict:
                        pipe.hincrby(
                            self.keys.feedback_day(feedback.team, old_day), old_verdict, -1
                        )
                    counts = self.keys.feedback_day(feedback.team, day)
                    pipe.hincrby(counts, feedback.verdict, 1)
                    pipe.expire(counts, KEEP_S)
                    pipe.hset(votes, feedback.user, f"{day} {feedback.verdict}")
                    pipe.expire(votes, KEEP_S)
                    pipe.xadd(
                        self.keys.feedback(feedback.team),
                        {"data": json.dumps(feedback.__dict__, separators=(",", ":"))},
                        maxlen=MAX_ENTRIES,
                        approximate=True,
                    )
                    self.audit.add_to(pipe, _audited(feedback), self.keys.team_shard(feedback.team))
                    await pipe.execute()
                    return True
                except WatchError:
                    continue  # the same person clicked twice at once: read again

    async def per_day(self, team: str, days: int) -> list[DayCount]:
        """Up and down per day, newest first (one round trip)."""
        today = datetime.now(UTC).date()
        stamps = [(today - timedelta(days=n)).isoformat() for n in range(days)]
        async with self.client.pipeline(transaction=False) as pipe:
            for stamp in stamps:
                pipe.hgetall(self.keys.feedback_day(team, stamp))
            raw = await pipe.execute()
        return [
            DayCount(stamp, int(counts.get("up", 0)), int(counts.get("down", 0)))
            for stamp, counts in zip(stamps, raw, strict=True)
        ]

    async def latest_negative(self, team: str, count: int, scan: int = 500) -> list[Feedback]:
        """The latest answers people still rate as bad, newest first: a vote later changed
        to good is left out, and each person's vote on an answer shows once."""
        items = await self.client.xrevrange(self.keys.feedback(team), count=scan)
        candidates: dict[tuple[str, str, str], Feedback] = {}
        for _, fields in items:
            data = json.loads(fields["data"])
            if data.get("verdict") == "down":
                found = Feedback(**data)
                candidates.setdefault((found.channel, found.message_ts, found.user), found)
        if not candidates:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for channel, message_ts, user in candidates:
                pipe.hget(self.keys.feedback_votes(team, channel, message_ts), user)
            current = await pipe.execute()
        still = [
            found
            for found, vote in zip(candidates.values(), current, strict=True)
            if str(vote or "").endswith(" down")
        ]
        return still[:count]


def _audited(feedback: Feedback) -> AuditEntry:
    return AuditEntry(
        kind=AuditKind.FEEDBACK,
        actor=feedback.user,
        action=feedback.verdict,
        target=feedback.turn,
        detail={
            "channel": feedback.channel,
            "thread": feedback.thread_ts,
            "message": feedback.message_ts,
            "model": feedback.model,
            "tools": feedback.tools,
        },
    )
