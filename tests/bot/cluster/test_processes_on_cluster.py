"""``slack-agent run`` as deployed, on a Redis Cluster: a supervisor with two worker
processes, REDIS_URL naming one node; and a config that does not match the server stops
the process at start-up with words that name the fix."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from tests.bot.process.test_run_command import (
    answers,
    healthy,
    processes,
    send_mention,
    spawn,
)
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM, text
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.fakes.redis_server import free_port
from tests.fakes.slack_harness import app_environment
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until

__all__ = ["processes"]

THREADS = 12


def config(tmp_path: Path, key_prefix: str, cluster: bool) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"redis: {{key_prefix: '{key_prefix}', cluster: {str(cluster).lower()}, shards: 16}}\n"
        "slack: {streaming: false}\n"
    )
    return path


@pytest.mark.faults
async def test_worker_processes_answer_threads_spread_over_every_primary(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    redis_cluster: PrivateRedisCluster,
    processes: list[asyncio.subprocess.Process],
) -> None:
    env = app_environment(
        fake_slack.api_url, fake_llm.base_url, redis_cluster.url, config(tmp_path, key_prefix, True)
    )
    for n in range(THREADS):
        fake_llm.add(text(f"Answer {n}."))
    port = free_port()
    run = await spawn(processes, env, "run", "--port", str(port), "--workers", "2")
    await healthy(port)
    threads = [f"{900 + n}.000001" for n in range(THREADS)]
    statuses = await asyncio.gather(
        *(send_mention(port, f"question {n}", ts) for n, ts in enumerate(threads))
    )
    assert statuses == [200] * THREADS
    await until(lambda: all(len(answers(fake_slack, ts)) == 1 for ts in threads), 30)
    assert sorted(a for ts in threads for a in answers(fake_slack, ts)) == sorted(
        f"Answer {n}." for n in range(THREADS)
    )
    # The turn streams (one per shard) and the threads' histories live on every primary.
    streams = redis_cluster.keys_per_node(f"{key_prefix}*turns")
    assert sum(streams) == 16 and all(count >= 4 for count in streams), streams
    # (A turn's history is written in the step after its answer was posted.)
    pattern = f"{key_prefix}*history:*:bytes"
    await until(lambda: sum(redis_cluster.keys_per_node(pattern)) == THREADS, 10)
    assert all(redis_cluster.keys_per_node(pattern))
    run.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(run.wait(), 40) == 0


@pytest.mark.parametrize("cluster", [True, False])
async def test_a_config_that_does_not_match_the_server_stops_at_start_up(
    cluster: bool,
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    redis_cluster: PrivateRedisCluster,
    processes: list[asyncio.subprocess.Process],
) -> None:
    url = REDIS_URL if cluster else redis_cluster.url  # the other kind of server
    env = app_environment(
        fake_slack.api_url, fake_llm.base_url, url, config(tmp_path, key_prefix, cluster)
    )
    process = await spawn(processes, env, "worker", "--processes", "0")
    assert await asyncio.wait_for(process.wait(), 30) == 2
    err = (await process.stderr.read()).decode()  # type: ignore[union-attr]
    assert "slack-agent: configuration error" in err and "Traceback" not in err
    expected = "is not in cluster mode" if cluster else "set redis.cluster: true"
    assert expected in err
