"""Each person's open approval requests, counted on the real Redis (and a Redis Cluster):
never more than the most, however many ask at once; a place is let go of at the deadline or
when released."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.process.state import State
from bot.state.approval_quota import Place

pytestmark = pytest.mark.cluster


async def test_many_asking_at_once_never_take_more_than_the_most(state: State) -> None:
    quota, deadline = state.shared.approval_quota, time.time() + 600
    places = await asyncio.gather(
        *(quota.take("T1", "U1", f"r{i}", deadline, 3) for i in range(12))
    )
    assert sum(place.taken for place in places) == 3
    assert all(place.open == 3 for place in places if not place.taken)
    assert sorted(await quota.holders("T1", "U1")) == sorted(
        f"r{i}" for i, place in enumerate(places) if place.taken
    )
    # Another person, another count; a holder asking again keeps its place.
    assert (await quota.take("T1", "U2", "x1", deadline, 3)).taken
    holder = (await quota.holders("T1", "U1"))[0]
    assert await quota.take("T1", "U1", holder, deadline, 3) == Place(True, 3)


async def test_a_place_is_let_go_of_at_the_deadline_or_when_released(state: State) -> None:
    quota, now = state.shared.approval_quota, time.time()
    assert (await quota.take("T1", "U1", "soon", now + 0.3, 2)).taken
    assert (await quota.take("T1", "U1", "later", now + 600, 2)).taken
    assert not (await quota.take("T1", "U1", "third", now + 600, 2)).taken
    await asyncio.sleep(0.4)  # "soon" is past its deadline: its place is free
    assert (await quota.take("T1", "U1", "third", now + 600, 2)).taken
    await quota.release("T1", "U1", ["later"])
    assert sorted(await quota.holders("T1", "U1")) == ["third"]
    key = state.keys.open_approvals("T1", "U1")
    assert 600 < await state.client.ttl(key) <= 600 + 3600  # gone an hour after the last
