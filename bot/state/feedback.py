"""Feedback on answers (Slack's thumbs up / down): each click with its turn, model, tools and
person, counted per day (UTC), the latest kept for reading; and an audit entry, all in one
step."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bot.state.audit import AuditEntry, AuditLog
from bot.state.connection import Redis
from bot.state.keys import Keys

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

    async def add(self, feedback: Feedback) -> None:
        day = datetime.fromtimestamp(feedback.at, UTC).date().isoformat()
        counts = self.keys.feedback_day(feedback.team, day)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.xadd(
                self.keys.feedback(feedback.team),
                {"data": json.dumps(feedback.__dict__, separators=(",", ":"))},
                maxlen=MAX_ENTRIES,
                approximate=True,
            )
            pipe.hincrby(counts, feedback.verdict, 1)
            pipe.expire(counts, KEEP_S)
            self.audit.add_to(
                pipe,
                AuditEntry(
                    kind="feedback",
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
                ),
            )
            await pipe.execute()

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
        items = await self.client.xrevrange(self.keys.feedback(team), count=scan)
        found = []
        for _, fields in items:
            data = json.loads(fields["data"])
            if data.get("verdict") == "down":
                found.append(Feedback(**data))
                if len(found) == count:
                    break
        return found
