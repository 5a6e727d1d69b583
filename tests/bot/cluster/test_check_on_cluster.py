"""``slack-agent check`` with ``redis.cluster``: the cluster reached through any one node, and
a config that does not match the server named as the problem."""

from __future__ import annotations

from pathlib import Path

from tests.bot.check.test_check_command import check, config, environment, lines
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.fakes.slack_server import FakeSlack

CLUSTER_CONFIG = "llm: {model: fake-model}\nredis: {cluster: true}\n"


async def test_a_cluster_is_reached_through_one_node(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path, redis_cluster: PrivateRedisCluster
) -> None:
    env = environment(fake_llm, fake_slack, redis_cluster.url)
    _, checks, _ = await check("--config", str(config(tmp_path, CLUSTER_CONFIG)), env=env)
    [reached] = [line for line in lines(checks, "ok") if line.startswith("redis: reachable")]
    assert f"127.0.0.1:{redis_cluster.ports[1]}/0, Redis 7" in reached
    assert not [line for line in lines(checks, "fail") if line.startswith("redis")]


async def test_cluster_mode_that_does_not_match_the_server_fails(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path, redis_cluster: PrivateRedisCluster
) -> None:
    single = environment(fake_llm, fake_slack, REDIS_URL)
    code, checks, _ = await check("--config", str(config(tmp_path, CLUSTER_CONFIG)), env=single)
    assert code == 1
    assert any("is not in cluster mode" in line for line in lines(checks, "fail"))
    node = environment(fake_llm, fake_slack, redis_cluster.url)
    code, checks, _ = await check("--config", str(config(tmp_path)), env=node)
    assert code == 1
    assert any("set redis.cluster: true" in line for line in lines(checks, "fail"))
