"""Feedback on answers: one vote per person per answer, counted per day, audited."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.process.state import State
from bot.state.feedback import Feedback

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


def vote(verdict: str, user: str = "U1", message_ts: str = "10.000002") -> Feedback:
    return Feedback(
        verdict=verdict,
        user=user,
        team="T1",
        channel="C1",
        thread_ts="10.000001",
        message_ts=message_ts,
        turn="1-0",
        model="fake-model",
        tools=["calculate"],
    )


async def counts(state: State) -> tuple[int, int]:
    [today] = await state.shared.feedback.per_day("T1", 1)
    # the day as it is now (not when the module was imported: a run may cross midnight)
    assert today.day == datetime.now(UTC).date().isoformat()
    return today.up, today.down


async def test_a_repeated_click_counts_once(state: State) -> None:
    assert await state.shared.feedback.add(vote("down"))
    assert not await state.shared.feedback.add(vote("down"))
    assert await counts(state) == (0, 1)
    assert len(await state.shared.feedback.latest_negative("T1", 5)) == 1
    audited = [e for e in await state.shared.audit.latest(10) if e.kind == "feedback"]
    assert [e.action for e in audited] == ["down"]


async def test_a_changed_mind_moves_the_count(state: State) -> None:
    await state.shared.feedback.add(vote("down"))
    await state.shared.feedback.add(vote("up"))
    assert await counts(state) == (1, 0)
    assert await state.shared.feedback.latest_negative("T1", 5) == []  # no longer a bad answer
    await state.shared.feedback.add(vote("down"))
    assert await counts(state) == (0, 1)
    [latest] = await state.shared.feedback.latest_negative("T1", 5)
    assert latest.user == "U1"
    audited = [e.action for e in await state.shared.audit.latest(10) if e.kind == "feedback"]
    assert audited == ["down", "up", "down"]  # every change is in the audit log


async def test_people_and_answers_count_apart(state: State) -> None:
    await asyncio.gather(
        state.shared.feedback.add(vote("down", user="U1")),
        state.shared.feedback.add(vote("down", user="U2")),
        state.shared.feedback.add(vote("up", user="U1", message_ts="10.000003")),
    )
    assert await counts(state) == (1, 2)
    negative = await state.shared.feedback.latest_negative("T1", 5)
    assert sorted(f.user for f in negative) == ["U1", "U2"]
    assert len(await state.shared.feedback.latest_negative("T1", 1)) == 1


async def test_the_same_click_twice_at_once_counts_once(state: State) -> None:
    added = await asyncio.gather(*(state.shared.feedback.add(vote("up")) for _ in range(5)))
    assert sorted(added) == [False, False, False, False, True]
    assert await counts(state) == (1, 0)
