"""The tests of this folder run the app on a private Redis Cluster of three primaries
(``redis.cluster: true``, REDIS_URL naming one node), one cluster per test worker (it starts
in about 2 s), so these tests spread over the workers like any others.

``slack_app``, ``make_state`` and ``state`` are the root conftest's, moved onto the cluster,
so end-to-end scenarios written for a single Redis are imported here and run unchanged: any
step that touched keys of two slots would fail with Redis's CROSSSLOT error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.process.state import State, open_state
from tests.conftest import config_with_prefix
from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.fakes.slack_harness import SlackHarness
from tests.fakes.slack_server import FakeSlack

CLUSTER = {"cluster": True, "shards": 16}


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[PrivateRedisCluster]:
    with PrivateRedisCluster() as cluster:
        yield cluster


@pytest.fixture
async def make_state(
    key_prefix: str, redis_cluster: PrivateRedisCluster
) -> AsyncIterator[Callable[..., State]]:
    """States on the cluster, under this test's own prefix (the cluster is private: nothing
    to clean up but the connections)."""
    made: list[State] = []

    def make(url: str | None = redis_cluster.url, **sections: Any) -> State:
        redis = {"key_prefix": key_prefix, **CLUSTER, **sections.pop("redis", {})}
        state = open_state(url, config_with_prefix(key_prefix, redis=redis, **sections))
        made.append(state)
        return state

    yield make
    for state in made:
        await state.aclose()


@pytest.fixture
async def state(make_state: Callable[..., State]) -> State:
    return make_state()


@pytest.fixture
async def slack_app(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    key_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    redis_cluster: PrivateRedisCluster,
) -> AsyncIterator[SlackHarness]:
    """The app on the cluster, not yet started: call ``await slack_app.start(**config)``."""
    harness = SlackHarness(
        fake_slack, fake_llm, redis_cluster.url, key_prefix, tmp_path, monkeypatch, CLUSTER
    )
    try:
        yield harness
    finally:
        await harness.stop()
