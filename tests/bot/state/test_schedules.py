"""Schedules in Redis: made, read, paused, resumed and removed, each change audited in its
step; at most max_per_person each, even when made at once; ids never reused; the due index;
the firing record's claim, headline and advance (compare-and-set); a one-off that ends stays
listed. On a single Redis and on a Redis Cluster (every schedule key in one slot)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.process.state import State
from bot.schedules.recurrence import Recurrence
from bot.state.audit import AuditKind
from bot.state.schedules import ENDED_KEEP_S, Firing, Schedule, ScheduleStore, TooMany
from tests.bot.schedules.firing_kit import stand_at

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

HOURLY = Recurrence(cron="0 * * * *", at=None, timezone="UTC")
NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


async def make(
    store: ScheduleStore,
    owner: str = "U1",
    *,
    next_at: float = NINE,
    recurrence: Recurrence = HOURLY,
    limit: int = 10,
    team: str = "T1",
) -> Schedule:
    made = await store.create(
        team=team,
        owner=owner,
        channel="C0OPS",
        prompt="Summarise yesterday's incidents.",
        recurrence=recurrence,
        next_at=next_at,
        max_per_person=limit,
        by=owner,
    )
    assert isinstance(made, Schedule)
    return made


async def test_a_schedule_is_made_read_and_audited(state: State) -> None:
    store = state.shared.schedules
    made = await make(store)
    assert made.id == "s1" and made.state == "active" and made.reason == ""
    assert (made.team, made.owner, made.channel) == ("T1", "U1", "C0OPS")
    assert made.recurrence == HOURLY
    assert (made.next_at, made.last_at, made.last_outcome, made.missed) == (NINE, None, "", 0)
    assert await store.get("s1") == made
    assert await store.get("s99") is None
    assert await store.of_owner("T1", "U1") == [made]
    assert await store.of_owner("T1", "U2") == []
    other = await make(store, "U2")
    elsewhere = await make(store, "U3", team="T2")
    assert await store.everyone("T1") == [made, other]
    assert await store.everyone("T2") == [elsewhere]
    entry = (await state.shared.audit.latest(3))[-1]
    assert (entry.kind, entry.action, entry.actor, entry.target) == (
        AuditKind.SCHEDULE,
        "created",
        "U1",
        "s1",
    )
    assert entry.detail["schedule"] == "s1" and entry.detail["channel"] == "C0OPS"
    assert entry.detail["prompt"] == "Summarise yesterday's incidents."


async def test_at_most_max_per_person_even_when_made_at_once(state: State) -> None:
    store = state.shared.schedules
    made = await asyncio.gather(*(make_or_refuse(store, "U1", 3) for _ in range(12)))
    assert sum(isinstance(m, Schedule) for m in made) == 3
    assert sum(m == TooMany(3) for m in made) == 9
    assert len(await store.of_owner("T1", "U1")) == 3
    assert len(await state.shared.audit.latest(20)) == 3  # a refusal writes nothing
    # Another person's count is their own; a paused schedule counts, a removed one does not.
    assert isinstance(await make_or_refuse(store, "U2", 3), Schedule)
    first = (await store.of_owner("T1", "U1"))[0]
    await store.pause(first.id, by="U1", reason="paused by <@U1>")
    assert await make_or_refuse(store, "U1", 3) == TooMany(3)
    await store.remove(first.id, by="U1")
    again = await make_or_refuse(store, "U1", 3)
    assert isinstance(again, Schedule) and again.id == "s5"  # ids are never reused


async def make_or_refuse(store: ScheduleStore, owner: str, limit: int) -> Schedule | TooMany:
    return await store.create(
        team="T1",
        owner=owner,
        channel="C1",
        prompt="p",
        recurrence=HOURLY,
        next_at=NINE,
        max_per_person=limit,
        by=owner,
    )


async def test_pause_resume_and_remove_are_audited_and_move_the_due_index(state: State) -> None:
    store = state.shared.schedules
    made = await make(store)
    assert await store.due(NINE, 10) == [("s1", NINE)]
    assert await store.due(NINE - 1, 10) == []

    paused = await store.pause("s1", by="U0ADMIN", reason="paused by <@U0ADMIN>")
    assert paused is not None
    assert (paused.state, paused.reason) == ("paused", "paused by <@U0ADMIN>")
    assert await store.due(NINE + HOUR, 10) == []  # a paused schedule is never due
    assert await store.count_active() == 0
    again = await store.pause("s1", by="U1", reason="paused by <@U1>")
    assert again == paused  # already paused: left as it is, not audited again

    resumed = await store.resume("s1", by="U1", next_at=NINE + 5 * HOUR)
    assert resumed is not None and (resumed.state, resumed.reason) == ("active", "")
    assert resumed.next_at == NINE + 5 * HOUR
    assert await store.due(NINE + 5 * HOUR, 10) == [("s1", NINE + 5 * HOUR)]
    assert await store.resume("s1", by="U1", next_at=NINE) == resumed  # active: as it is

    removed = await store.remove("s1", by="U1")
    assert removed == resumed
    assert await store.get("s1") is None and await store.remove("s1", by="U1") is None
    assert await store.pause("s1", by="U1", reason="x") is None
    assert await store.resume("s1", by="U1", next_at=NINE) is None
    assert await store.due(NINE + 9 * HOUR, 10) == [] and await store.of_owner("T1", "U1") == []

    entries = list(reversed(await state.shared.audit.latest(10)))
    assert [(e.action, e.actor, e.target) for e in entries] == [
        ("created", "U1", "s1"),
        ("paused", "U0ADMIN", "s1"),
        ("resumed", "U1", "s1"),
        ("removed", "U1", "s1"),
    ]
    assert entries[1].detail == {
        "reason": "paused by <@U0ADMIN>",
        "team": "T1",
        "owner": "U1",
        "channel": "C0OPS",
    }
    assert entries[3].detail["prompt"] == made.prompt


async def test_due_is_earliest_first_within_the_limit(state: State) -> None:
    store = state.shared.schedules
    for hours in (3, 1, 2, 9):
        await make(store, f"U{hours}", next_at=NINE + hours * HOUR)
    assert await store.due(NINE + 3 * HOUR, 2) == [("s2", NINE + HOUR), ("s3", NINE + 2 * HOUR)]
    await stand_at(store, NINE + 3 * HOUR)
    look = await store.look(20)
    assert look.due == [("s2", NINE + HOUR), ("s3", NINE + 2 * HOUR), ("s1", NINE + 3 * HOUR)]
    assert look.active == 4 == await store.count_active()
    assert look.now == pytest.approx(NINE + 3 * HOUR, abs=0.2)


async def claim(
    store: ScheduleStore, schedule_id: str, occurrence: float, holder: str, *, at: float
) -> Firing | None:
    """A claim for 30 s with the store's clock standing at ``at``."""
    await stand_at(store, at)
    return await store.claim(schedule_id, occurrence, holder, lease_s=30)


async def test_one_holder_at_a_time_until_its_lease_lapses(state: State) -> None:
    store = state.shared.schedules
    await make(store)
    first = await claim(store, "s1", NINE, "A", at=NINE + 1)
    assert first is not None
    assert (first.holder, first.ts, first.attempts) == ("A", "", 1)
    assert first.claimed_at == first.first_claimed_at == pytest.approx(NINE + 1, abs=0.2)
    assert first.until == pytest.approx(first.claimed_at + 30, abs=1e-5)
    assert await store.due(NINE + 30, 5) == []  # out of the due window while claimed
    assert await store.due(first.until, 5) == [("s1", first.until)]
    assert not first.taken_over and first.schedule.id == "s1"
    assert await claim(store, "s1", NINE, "B", at=NINE + 30) is None
    assert await claim(store, "s1", NINE, "A", at=NINE + 2) is None  # even A
    assert await claim(store, "s1", NINE + HOUR, "B", at=NINE + 2) is None

    assert await store.record_headline(first, "1700000000.000100", first.first_claimed_at)
    taken = await claim(store, "s1", NINE, "B", at=NINE + 32)
    assert taken is not None and taken.taken_over
    assert (taken.ts, taken.first_claimed_at, taken.attempts) == (
        "1700000000.000100",
        first.first_claimed_at,
        2,
    )
    assert not await store.record_headline(first, "1700000000.000200", NINE)  # A lost it
    assert not await store.advance(first, ran=NINE, next_at=NINE + HOUR, missed=0, outcome="x")

    assert await store.advance(taken, ran=NINE, next_at=NINE + HOUR, missed=2, outcome="queued")
    after = await store.get("s1")
    assert after is not None
    assert (after.next_at, after.last_at, after.missed, after.last_outcome) == (
        NINE + HOUR,
        NINE,
        2,
        "queued",
    )
    assert await store.due(NINE + HOUR, 5) == [("s1", NINE + HOUR)]
    # The schedule moved on: the occurrence cannot be claimed or advanced again.
    assert await claim(store, "s1", NINE, "C", at=NINE + 999) is None
    assert not await store.advance(taken, ran=NINE, next_at=NINE + HOUR, missed=0, outcome="x")

    await store.record_outcome("s1", NINE - HOUR, "failed")  # not its last run: no change
    await store.record_outcome("s1", NINE, "answered")
    last = await store.get("s1")
    assert last is not None and last.last_outcome == "answered"


async def test_an_advance_keeps_the_outcome_of_a_run_that_already_ended(state: State) -> None:
    store = state.shared.schedules
    await make(store)
    firing = await claim(store, "s1", NINE, "A", at=NINE + 1)
    assert firing is not None
    assert await store.advance(firing, ran=NINE, next_at=NINE + HOUR, missed=0, outcome="queued")
    await store.record_outcome("s1", NINE, "answered")
    again = await claim(store, "s1", NINE + HOUR, "B", at=NINE + HOUR + 1)
    assert again is not None  # an advance naming the same run: its outcome stays
    assert await store.advance(again, ran=NINE, next_at=NINE + 2 * HOUR, missed=1, outcome="queued")
    kept = await store.get("s1")
    assert kept is not None
    assert (kept.last_at, kept.last_outcome, kept.missed) == (NINE, "answered", 1)
    third = await claim(store, "s1", NINE + 2 * HOUR, "B", at=NINE + 2 * HOUR + 1)
    assert third is not None  # another run: its own outcome
    assert await store.advance(
        third, ran=NINE + 2 * HOUR, next_at=NINE + 3 * HOUR, missed=0, outcome="queued"
    )
    latest = await store.get("s1")
    assert latest is not None and (latest.last_at, latest.last_outcome) == (
        NINE + 2 * HOUR,
        "queued",
    )


async def test_a_paused_or_removed_schedule_cannot_be_claimed(state: State) -> None:
    store = state.shared.schedules
    await make(store)
    await make(store, "U2")
    await store.pause("s1", by="U1", reason="paused by <@U1>")
    await store.remove("s2", by="U2")
    assert await claim(store, "s1", NINE, "A", at=NINE) is None
    assert await claim(store, "s2", NINE, "A", at=NINE) is None


async def test_paused_while_firing_the_run_advances_but_stays_out_of_due(state: State) -> None:
    store = state.shared.schedules
    await make(store)
    firing = await claim(store, "s1", NINE, "A", at=NINE)
    assert firing is not None
    await store.pause("s1", by="U1", reason="paused by <@U1>")
    assert await store.advance(firing, ran=NINE, next_at=NINE + HOUR, missed=0, outcome="queued")
    paused = await store.get("s1")
    assert paused is not None and (paused.state, paused.last_at) == ("paused", NINE)
    assert await store.due(NINE + 2 * HOUR, 5) == []


async def test_a_skip_is_audited_and_a_one_off_ends_listed_for_a_week(state: State) -> None:
    store = state.shared.schedules
    await make(store)
    skipped = await claim(store, "s1", NINE, "A", at=NINE + 3 * HOUR)
    assert skipped is not None
    assert await store.advance(
        skipped, ran=None, next_at=NINE + 4 * HOUR, missed=3, outcome="skipped"
    )
    entry = (await state.shared.audit.latest(1))[0]
    assert (entry.action, entry.actor, entry.target, entry.detail["missed"]) == (
        "skipped",
        "U1",
        "s1",
        3,
    )
    one_off = Recurrence(cron=None, at=datetime.fromtimestamp(NINE, UTC), timezone="UTC")
    await make(store, "U2", recurrence=one_off)
    firing = await claim(store, "s2", NINE, "A", at=NINE)
    assert firing is not None
    assert await store.advance(firing, ran=NINE, next_at=None, missed=0, outcome="queued")
    ended = await store.get("s2")
    assert ended is not None and (ended.state, ended.next_at, ended.last_at) == (
        "ended",
        None,
        NINE,
    )
    assert await store.due(NINE + 9 * HOUR, 5) == [("s1", NINE + 4 * HOUR)]
    assert await store.of_owner("T1", "U2") == [ended]
    assert 0 < await state.client.ttl(state.keys.schedule("s2")) <= ENDED_KEEP_S
    assert len(await state.shared.audit.latest(10)) == 3  # created twice, skipped once
    assert isinstance(await make_or_refuse(store, "U2", 1), Schedule)  # ended: not counted

    # Once it expires, the indexes forget it as they are read; an ended one does not count.
    await state.client.delete(state.keys.schedule("s2"))
    assert [s.id for s in await store.of_owner("T1", "U2")] == ["s3"]
    assert [s.id for s in await store.everyone("T1")] == ["s1", "s3"]
    assert not await state.client.sismember(state.keys.schedules_all(), "s2")
