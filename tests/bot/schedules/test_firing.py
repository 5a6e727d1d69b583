"""The firing protocol on real Redis (and a Redis Cluster) with the real turn queue: one
occurrence fired once by ten claimers at once; a holder that dies after posting its headline,
or after queueing the turn, is taken over without a second post or a second turn; missed runs
caught up once or counted; a one-off ends; a paused schedule and an owner who left do not
run; a Slack failure is tried again once the claim lapses. Every "now" is passed in, and
the store's clock (Redis's, which decides) set to stand at it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from bot.process.state import State
from bot.schedules.config import SchedulesConfig
from bot.schedules.firing import (
    LEASE_S,
    MAX_ATTEMPTS,
    OWNER_GONE,
    ChannelRefused,
    Failed,
    Fired,
    FireOutcome,
    NotMine,
    Paused,
    Skipped,
    fire,
)
from bot.schedules.recurrence import Recurrence
from bot.state.audit import AuditKind
from bot.state.schedules import Schedule, ScheduleStore
from bot.turn.model import QueuedTurn, Turn, TurnKind
from tests.bot.schedules.firing_kit import (
    CountingEnqueue,
    FakeHeadlines,
    FakeOwners,
    HolderDied,
    Post,
    stand_at,
)

pytestmark = pytest.mark.cluster

HOURLY = Recurrence(cron="0 * * * *", at=None, timezone="UTC")
NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0
PROMPT = "Summarise yesterday's incidents."


@dataclass
class Kit:
    state: State
    headlines: FakeHeadlines = field(default_factory=FakeHeadlines)
    owners: FakeOwners = field(default_factory=FakeOwners)
    config: SchedulesConfig = field(default_factory=SchedulesConfig)
    enqueue: CountingEnqueue = field(init=False)

    def __post_init__(self) -> None:
        self.enqueue = CountingEnqueue(self.state.threads.queue.enqueue)

    @property
    def store(self) -> ScheduleStore:
        return self.state.shared.schedules

    async def schedule(self, recurrence: Recurrence = HOURLY, next_at: float = NINE) -> Schedule:
        made = await self.store.create(
            team="T1",
            owner="U1",
            channel="C0OPS",
            prompt=PROMPT,
            recurrence=recurrence,
            next_at=next_at,
            max_per_person=10,
            by="U1",
        )
        assert isinstance(made, Schedule)
        return made

    async def fire(
        self,
        occurrence: float,
        now: float,
        holder: str = "A",
        schedule_id: str = "s1",
        *,
        redis_at: float | None = None,
    ) -> FireOutcome:
        """Fire seeing it due at ``now``, the store's clock standing at ``redis_at`` (by
        default ``now``: the two clocks agree)."""
        await stand_at(self.store, now if redis_at is None else redis_at)
        return await fire(
            self.store,
            self.headlines,
            self.owners,
            self.enqueue,
            schedule_id,
            occurrence,
            now=now,
            holder=holder,
            config=self.config,
        )

    async def current(self, schedule_id: str = "s1") -> Schedule:
        found = await self.store.get(schedule_id)
        assert found is not None
        return found

    async def queued(self) -> list[Turn]:
        """The turns on the queue (each shard's stream)."""
        queue = self.state.threads.queue
        await queue.ensure_group()
        entries = await queue.read("reader", 100, 0)
        return [entry.turn for entry in entries if isinstance(entry, QueuedTurn)]


@pytest.fixture
def kit(state: State) -> Kit:
    return Kit(state)


async def test_ten_claimers_at_once_fire_one_occurrence_once(kit: Kit) -> None:
    await kit.schedule()
    outcomes = await asyncio.gather(
        *(kit.fire(NINE, now=NINE + 0.5, holder=f"replica-{n}") for n in range(10))
    )
    fired = [o for o in outcomes if isinstance(o, Fired)]
    assert len(fired) == 1 and outcomes.count(NotMine()) == 9
    [done] = fired
    assert kit.headlines.posts == [Post("s1", NINE, 0, done.ts)]
    assert kit.headlines.finds == 0  # a first claim has nothing to look for
    assert kit.owners.asked == 1
    assert kit.enqueue.entry_ids == [done.entry_id] and done.entry_id is not None
    assert done.skipped == 0 and done.late_s == pytest.approx(0.5, abs=0.2)
    [turn] = await kit.queued()
    assert turn.kind is TurnKind.SCHEDULED
    assert (turn.team, turn.channel, turn.user, turn.text) == ("T1", "C0OPS", "U1", PROMPT)
    assert turn.thread_ts == turn.message_ts == done.ts
    assert turn.event_id == f"schedule:s1:{int(NINE)}"
    after = await kit.current()
    assert (after.next_at, after.last_at, after.last_outcome, after.missed) == (
        NINE + HOUR,
        NINE,
        "queued",
        0,
    )
    assert await kit.store.due(NINE + HOUR - 1, 5) == []
    assert await kit.fire(NINE, now=NINE + 99, holder="late") == NotMine()  # moved on


async def test_a_holder_dead_after_its_post_is_taken_over_without_a_second_post(kit: Kit) -> None:
    await kit.schedule()
    kit.headlines.die_after_post = True
    with pytest.raises(HolderDied):
        await kit.fire(NINE, now=NINE + 1, holder="A")
    [posted] = kit.headlines.posts
    assert await kit.fire(NINE, now=NINE + 1 + LEASE_S - 1, holder="B") == NotMine()  # leased
    taken = await kit.fire(NINE, now=NINE + 1 + LEASE_S + 0.5, holder="B")
    assert isinstance(taken, Fired) and taken.ts == posted.ts
    assert kit.headlines.posts == [posted] and kit.headlines.finds == 1
    assert [t.message_ts for t in await kit.queued()] == [posted.ts]
    assert (await kit.current()).next_at == NINE + HOUR


async def test_a_holder_dead_after_queueing_is_taken_over_and_the_queue_dedups(kit: Kit) -> None:
    await kit.schedule()
    kit.enqueue.die_after = True
    with pytest.raises(HolderDied):
        await kit.fire(NINE, now=NINE + 1, holder="A")
    [posted] = kit.headlines.posts
    assert (await kit.current()).next_at == NINE  # not advanced
    taken = await kit.fire(NINE, now=NINE + 2 + LEASE_S, holder="B")
    assert isinstance(taken, Fired) and taken.ts == posted.ts
    assert taken.entry_id is None  # queued before: the second enqueue was a no-op
    assert kit.headlines.posts == [posted] and kit.headlines.finds == 0  # the record had it
    assert len(kit.enqueue.turns) == 2 and len(await kit.queued()) == 1
    assert (await kit.current()).next_at == NINE + HOUR


async def test_a_headline_whose_claim_redis_lost_is_found_not_posted_again(kit: Kit) -> None:
    await kit.schedule()
    kit.headlines.die_after_post = True
    with pytest.raises(HolderDied):
        await kit.fire(NINE, now=NINE + 1, holder="A")
    [posted] = kit.headlines.posts
    firing_key = kit.state.keys.schedule_firing("s1", str(int(NINE)))
    assert await kit.state.client.delete(firing_key) == 1  # Redis lost its last second
    taken = await kit.fire(NINE, now=NINE + 4, holder="B")  # a first claim, 4 s late
    assert isinstance(taken, Fired) and taken.ts == posted.ts
    assert kit.headlines.posts == [posted] and kit.headlines.finds == 1
    assert [t.message_ts for t in await kit.queued()] == [posted.ts]


async def test_every_holder_decides_from_the_first_claim(kit: Kit) -> None:
    """A takeover after the next occurrence passed still runs the first holder's run (whose
    headline it finds) and counts the one that passed meanwhile."""
    await kit.schedule()
    kit.headlines.die_after_post = True
    with pytest.raises(HolderDied):
        await kit.fire(NINE, now=NINE + 1, holder="A")
    taken = await kit.fire(NINE, now=NINE + HOUR + 5, holder="B")
    assert isinstance(taken, Fired) and taken.skipped == 1
    assert len(kit.headlines.posts) == 1
    [turn] = await kit.queued()
    assert turn.event_id == f"schedule:s1:{int(NINE)}"
    after = await kit.current()
    assert (after.last_at, after.next_at, after.missed) == (NINE, NINE + 2 * HOUR, 1)


async def test_a_stale_decision_with_no_headline_is_made_again_from_now(kit: Kit) -> None:
    """The first claim failed and nobody tried again for an hour: the run then is the one
    due now, not the first claim's; the holders after it decide alike."""
    kit.config = SchedulesConfig(catch_up_s=300)
    await kit.schedule()
    kit.owners.failure = RuntimeError("users.info timed out")
    assert isinstance(await kit.fire(NINE, now=NINE + 1, holder="A"), Failed)
    kit.owners.failure = None
    kit.enqueue.die_after = True
    with pytest.raises(HolderDied):
        await kit.fire(NINE, now=NINE + HOUR + 10, holder="B")
    [posted] = kit.headlines.posts
    assert posted == Post("s1", NINE + HOUR, 1, posted.ts)  # NINE missed
    taken = await kit.fire(NINE, now=NINE + HOUR + 20 + LEASE_S, holder="C")
    assert isinstance(taken, Fired) and taken.ts == posted.ts and taken.entry_id is None
    assert kit.headlines.posts == [posted]
    [turn] = await kit.queued()
    assert turn.event_id == f"schedule:s1:{int(NINE + HOUR)}"
    after = await kit.current()
    assert (after.last_at, after.next_at, after.missed) == (NINE + HOUR, NINE + 2 * HOUR, 0)


async def test_missed_runs_the_latest_once_and_counts_the_others(kit: Kit) -> None:
    await kit.schedule()
    now = NINE + 2 * HOUR + 600  # 09:00, 10:00 and 11:00 missed; 11:00 is 10 minutes late
    done = await kit.fire(NINE, now=now)
    assert isinstance(done, Fired) and done.skipped == 2
    assert done.late_s == pytest.approx(600, abs=0.2)
    assert kit.headlines.posts == [Post("s1", NINE + 2 * HOUR, 2, done.ts)]
    [turn] = await kit.queued()
    assert turn.event_id == f"schedule:s1:{int(NINE + 2 * HOUR)}"
    after = await kit.current()
    assert (after.last_at, after.next_at, after.missed) == (NINE + 2 * HOUR, NINE + 3 * HOUR, 0)


async def test_too_late_runs_none_and_carries_the_count_to_the_next_run(kit: Kit) -> None:
    kit.config = SchedulesConfig(catch_up_s=300)
    await kit.schedule()
    assert await kit.fire(NINE, now=NINE + 2 * HOUR + 600) == Skipped(3)
    assert kit.headlines.posts == [] and kit.enqueue.turns == []
    after = await kit.current()
    assert (after.next_at, after.last_at, after.last_outcome, after.missed) == (
        NINE + 3 * HOUR,
        None,
        "skipped",
        3,
    )
    entry = (await kit.state.shared.audit.latest(1))[0]
    assert (entry.kind, entry.action, entry.detail["missed"]) == (AuditKind.SCHEDULE, "skipped", 3)

    done = await kit.fire(NINE + 3 * HOUR, now=NINE + 3 * HOUR + 1)
    assert isinstance(done, Fired) and done.skipped == 0
    assert kit.headlines.posts == [Post("s1", NINE + 3 * HOUR, 3, done.ts)]  # "3 … missed"
    assert (await kit.current()).missed == 0


async def test_a_one_off_ends_and_stays_listed(kit: Kit) -> None:
    once = Recurrence(cron=None, at=datetime.fromtimestamp(NINE, UTC), timezone="Europe/Berlin")
    await kit.schedule(once)
    done = await kit.fire(NINE, now=NINE + 1)
    assert isinstance(done, Fired)
    ended = await kit.current()
    assert (ended.state, ended.next_at, ended.last_at) == ("ended", None, NINE)
    assert await kit.store.due(NINE + 10 * HOUR, 5) == []
    assert await kit.store.of_owner("T1", "U1") == [ended]


async def test_a_paused_schedule_is_not_due_and_does_not_fire(kit: Kit) -> None:
    await kit.schedule()
    await kit.store.pause("s1", by="U1", reason="paused by <@U1>")
    assert await kit.store.due(NINE + HOUR, 5) == []
    assert await kit.fire(NINE, now=NINE + 1) == NotMine()
    assert kit.headlines.posts == [] and kit.enqueue.turns == [] and kit.owners.asked == 0


async def test_an_owner_who_left_pauses_the_schedule_audited(kit: Kit) -> None:
    await kit.schedule()
    kit.owners.left.add("U1")
    assert await kit.fire(NINE, now=NINE + 1) == Paused(OWNER_GONE)
    paused = await kit.current()
    assert (paused.state, paused.reason) == ("paused", OWNER_GONE)
    assert kit.headlines.posts == [] and kit.enqueue.turns == []
    assert await kit.store.due(NINE + HOUR, 5) == []
    entry = (await kit.state.shared.audit.latest(1))[0]
    assert (entry.kind, entry.action, entry.actor, entry.target) == (
        AuditKind.SCHEDULE,
        "owner_gone",
        "U1",
        "s1",
    )
    assert entry.detail["reason"] == OWNER_GONE


async def test_an_owner_no_longer_in_the_channel_pauses_the_schedule_audited(kit: Kit) -> None:
    await kit.schedule()
    kit.owners.outside.add(("U1", "C0OPS"))
    reason = "owner is no longer in <#C0OPS>"
    assert await kit.fire(NINE, now=NINE + 1) == Paused(reason)
    paused = await kit.current()
    assert (paused.state, paused.reason) == ("paused", reason)
    assert kit.headlines.posts == [] and kit.enqueue.turns == []
    assert await kit.store.due(NINE + HOUR, 5) == []
    entry = (await kit.state.shared.audit.latest(1))[0]
    assert (entry.action, entry.actor, entry.target) == ("owner_left_channel", "U1", "s1")
    assert entry.detail["reason"] == reason


async def test_a_slack_failure_is_tried_again_once_the_claim_lapses(kit: Kit) -> None:
    await kit.schedule()
    kit.headlines.failure = RuntimeError("ratelimited")
    assert await kit.fire(NINE, now=NINE + 1) == Failed(
        "posting the headline failed: RuntimeError: ratelimited"
    )
    kit.headlines.failure = None
    assert await kit.fire(NINE, now=NINE + 5, holder="B") == NotMine()
    done = await kit.fire(NINE, now=NINE + 2 + LEASE_S, holder="B")
    assert isinstance(done, Fired)
    assert len(kit.headlines.posts) == 1 and kit.headlines.finds == 1

    kit.owners.failure = RuntimeError("users.info timed out")
    outcome = await kit.fire(NINE + HOUR, now=NINE + HOUR)
    assert outcome == Failed("looking up the owner failed: RuntimeError: users.info timed out")
    assert (await kit.current()).next_at == NINE + HOUR  # still due, for the next claim


async def test_a_channel_slack_refuses_for_good_pauses_the_schedule_audited(kit: Kit) -> None:
    await kit.schedule()
    kit.headlines.failure = ChannelRefused("not_in_channel")
    reason = "the bot cannot post in <#C0OPS>: not_in_channel"
    assert await kit.fire(NINE, now=NINE + 1) == Paused(reason)
    paused = await kit.current()
    assert (paused.state, paused.reason) == ("paused", reason)
    assert await kit.store.due(NINE + HOUR, 5) == [] and kit.enqueue.turns == []
    entry = (await kit.state.shared.audit.latest(1))[0]
    assert (entry.action, entry.target, entry.detail["reason"]) == ("channel_refused", "s1", reason)


async def test_a_run_failing_every_attempt_is_skipped_after_the_last(kit: Kit) -> None:
    await kit.schedule()
    kit.headlines.failure = RuntimeError("ratelimited")
    reason = "posting the headline failed: RuntimeError: ratelimited"
    for attempt in range(MAX_ATTEMPTS - 1):
        now = NINE + 1 + attempt * (LEASE_S + 1)
        assert await kit.fire(NINE, now=now, holder=f"R{attempt}") == Failed(reason)
        assert (await kit.current()).next_at == NINE
    last = NINE + 1 + MAX_ATTEMPTS * (LEASE_S + 1)
    assert await kit.fire(NINE, now=last, holder="last") == Skipped(1, reason)
    after = await kit.current()
    assert (after.next_at, after.last_at, after.missed) == (NINE + HOUR, None, 1)
    assert after.last_outcome == f"failed: {reason}"
    entry = (await kit.state.shared.audit.latest(1))[0]
    assert (entry.action, entry.target, entry.detail["missed"]) == ("skipped", "s1", 1)
    assert entry.detail["outcome"] == f"failed: {reason}"
    assert kit.headlines.posts == [] and kit.enqueue.turns == []


async def test_a_failing_run_more_than_catch_up_late_is_skipped(kit: Kit) -> None:
    kit.config = SchedulesConfig(catch_up_s=60)
    await kit.schedule()
    kit.owners.failure = RuntimeError("users.info timed out")
    assert isinstance(await kit.fire(NINE, now=NINE + 1), Failed)  # tried again at 31 s
    skipped = await kit.fire(NINE, now=NINE + 2 + LEASE_S, holder="B")  # next: over 60 s
    assert skipped == Skipped(1, "looking up the owner failed: RuntimeError: users.info timed out")
    after = await kit.current()
    assert (after.next_at, after.missed) == (NINE + HOUR, 1)
    assert after.last_outcome.startswith("failed: looking up the owner failed")

    kit.owners.failure = None  # the next occurrence runs, saying one was missed
    done = await kit.fire(NINE + HOUR, now=NINE + HOUR + 1)
    assert isinstance(done, Fired)
    assert kit.headlines.posts == [Post("s1", NINE + HOUR, 1, done.ts)]


async def test_a_replica_whose_clock_is_fast_neither_fires_early_nor_steals_a_claim(
    kit: Kit,
) -> None:
    await kit.schedule()
    fast = 60.0  # the replica's own clock, ahead of Redis's
    early = await kit.fire(NINE, now=NINE - 30 + fast, holder="fast", redis_at=NINE - 30)
    assert early == NotMine()
    assert kit.headlines.posts == [] and kit.owners.asked == 0
    assert (await kit.store.look(10)).due == []  # the look is on Redis's clock too

    kit.headlines.die_after_post = True
    with pytest.raises(HolderDied):
        await kit.fire(NINE, now=NINE + 1, holder="A")  # A's lease: until NINE + 31
    stolen = await kit.fire(NINE, now=NINE + 5 + fast, holder="fast", redis_at=NINE + 5)
    assert stolen == NotMine()
    assert len(kit.headlines.posts) == 1 and kit.enqueue.turns == []
    taken = await kit.fire(NINE, now=NINE + 2 + LEASE_S, holder="B")  # once it lapsed
    assert isinstance(taken, Fired) and len(kit.headlines.posts) == 1


async def test_not_due_yet_claims_nothing(kit: Kit) -> None:
    await kit.schedule()
    assert await kit.fire(NINE, now=NINE - 1) == NotMine()
    assert await kit.store.claim("s1", NINE, "B", lease_s=LEASE_S) is None  # by Redis's clock
    await stand_at(kit.store, NINE)
    assert await kit.store.claim("s1", NINE, "B", lease_s=LEASE_S) is not None
