"""Resolved roles in Redis: a write lands only while the person's generation is the one read
before the lookup; a grant, a revoke and forget() move it on in the same step as the change
(and drop the cached answers)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.process.state import State

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


async def test_a_write_with_the_generation_read_lands(state: State) -> None:
    cache = state.shared.roles
    read = await cache.read("T1", "U1", False)
    assert read.value is None
    assert await cache.write("T1", "U1", False, '["a"]', 300, read.generation)
    assert (await cache.read("T1", "U1", False)).value == '["a"]'
    assert (await cache.read("T1", "U1", True)).value is None  # kept apart
    ttl = await state.client.ttl(state.keys.roles("T1", "U1", False))
    assert 0 < ttl <= 300


@pytest.mark.parametrize("change", ["grant", "revoke", "forget"])
async def test_a_change_between_the_read_and_the_write_refuses_the_write(
    state: State, change: str
) -> None:
    await state.shared.grants.grant("T1", "U1", "admin", by="U0ADMIN")
    cache = state.shared.roles
    assert await cache.write(
        "T1", "U1", True, "old", 300, (await cache.read("T1", "U1", True)).generation
    )
    read = await cache.read("T1", "U1", False)  # a lookup starts...
    changes: dict[str, Callable[[], Awaitable[object]]] = {
        "grant": lambda: state.shared.grants.grant("T1", "U1", "warehouse_staff", by="U0ADMIN"),
        "revoke": lambda: state.shared.grants.revoke("T1", "U1", "admin"),
        "forget": lambda: cache.forget("T1", "U1"),
    }
    await changes[change]()  # ...a change lands...
    assert not await cache.write("T1", "U1", False, "stale", 300, read.generation)  # refused
    after = await cache.read("T1", "U1", False)
    assert after.value is None and after.generation != read.generation
    assert (await cache.read("T1", "U1", True)).value is None  # both answers dropped
    # The generation outlives every lookup, and then goes.
    ttl = await state.client.ttl(state.keys.roles_generation("T1", "U1"))
    assert ttl > 3600
    # A lookup that starts after the change writes as usual.
    assert await cache.write("T1", "U1", False, "fresh", 300, after.generation)
