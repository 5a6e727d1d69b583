"""One policy question's reads in one round trip: the same answers as the role cache's and
the switches' own reads, the person's answers kept apart, nothing kept between questions."""

from __future__ import annotations

import pytest

from bot.process.state import State
from tests.fakes.round_trips import counting_round_trips

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


async def separately(state: State, team: str, user: str, external: bool) -> tuple[object, object]:
    return await state.shared.roles.read(
        team, user, external
    ), await state.shared.switches.disabled()


async def test_the_same_answers_as_each_read_alone(state: State) -> None:
    reads = state.shared.policy_reads
    # Nothing yet: no cached answer, the generation "0", no tool off.
    assert await reads.read("T1", "U1", False) == await separately(state, "T1", "U1", False)
    cached, off = await reads.read("T1", "U1", False)
    assert cached.value is None and cached.generation == "0" and off == set()

    first = await state.shared.roles.read("T1", "U1", False)
    assert await state.shared.roles.write("T1", "U1", False, '["admin"]', 300, first.generation)
    await state.shared.switches.turn("calculate", False, by="U0ADMIN")
    await state.shared.switches.turn("web_search", False, by="U0ADMIN")
    await state.shared.switches.turn("web_search", True, by="U0ADMIN")  # back on
    cached, off = await reads.read("T1", "U1", False)
    assert cached.value == '["admin"]' and off == {"calculate"}
    assert (cached, off) == await separately(state, "T1", "U1", False)
    # As from elsewhere, and another person: answers of their own.
    assert (await reads.read("T1", "U1", True))[0].value is None
    assert (await reads.read("T1", "U2", False))[0].value is None

    await state.shared.roles.forget("T1", "U1")  # a grant or revoke: the generation moves on
    after, _ = await reads.read("T1", "U1", False)
    assert after.value is None and after.generation != first.generation
    assert (after, {"calculate"}) == await separately(state, "T1", "U1", False)


async def test_one_round_trip_for_both(state: State) -> None:
    await state.shared.switches.turn("calculate", False, by="U0ADMIN")
    await state.shared.policy_reads.read("T1", "U1", False)  # connections opened, scripts loaded
    with counting_round_trips() as trips:
        await state.shared.policy_reads.read("T1", "U1", False)
    # A cluster sends to each node that holds one of the keys: the switches' and the person's.
    assert trips.sent == 1 or (state.handle.cluster and trips.sent == 2)
