"""A worker process killed mid-turn on a Redis Cluster: the supervisor restarts it and
another worker process claims the turn from its shard's stream and answers it once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.cluster.conftest import CLUSTER
from tests.bot.process.test_worker_processes import (
    App,
    Launcher,
    apps,
    pytestmark,
    test_a_killed_worker_process_is_restarted_and_its_turn_answered_once,
)
from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.fakes.slack_server import FakeSlack

__all__ = [
    "apps",
    "pytestmark",
    "test_a_killed_worker_process_is_restarted_and_its_turn_answered_once",
]


@pytest.fixture
def launch(
    apps: list[App],
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    redis_cluster: PrivateRedisCluster,
) -> Launcher:
    return Launcher(apps, fake_slack, fake_llm, tmp_path, key_prefix, redis_cluster.url, CLUSTER)
