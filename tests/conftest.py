from __future__ import annotations

import compileall
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.schema import AppConfig, LLMConfig
from bot.llm.client import OpenAIChatModel
from bot.process.state import State, open_state
from tests import assertion_cache, fault_groups, xdist_groups
from tests.fakes.llm_server import FakeLLM
from tests.fakes.mcp_servers import HttpMcpServer
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_harness import SlackHarness
from tests.fakes.slack_server import FakeSlack


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeLLM]:
    server = FakeLLM()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def make_model(fake_llm: FakeLLM) -> AsyncIterator[Callable[..., OpenAIChatModel]]:
    """The real openai client pointed at the fake server."""
    made: list[OpenAIChatModel] = []

    def make(**settings: Any) -> OpenAIChatModel:
        settings.setdefault("model", "fake-model")
        settings.setdefault("max_retries", 2)
        settings.setdefault("timeout_s", 10)
        model = OpenAIChatModel(
            LLMConfig(**settings), api_key="test-key", base_url=fake_llm.base_url
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "tools", "permissions", "tests", "benchmarks")


def pytest_configure(config: pytest.Config) -> None:
    """Compile the project's modules once, before any test: most of the suite's CPU is the
    start-up of the processes it runs (the bot, the CLI, fake MCP servers), and where
    PYTHONDONTWRITEBYTECODE is set each of them would compile every module it imports from
    source (the installed packages are compiled by uv: pyproject's ``[tool.uv]``). Before
    xdist workers start, cache the test modules' assertion rewriting too, which each worker
    would otherwise do again (tests/assertion_cache.py)."""
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller has done it
    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1)
    if config.getoption("numprocesses", default=None):
        assertion_cache.cache_rewrites(config, assertion_cache.modules_rewritten(ROOT / "tests"))


# The fault tests mostly wait (on processes starting, outages, timeouts): one after
# another they take about 10 minutes on a 2-CPU machine, at a fifth of a core. Split in
# three, each third runs one test at a time on its own xdist worker, beside three workers
# for the rest (pyproject's addopts: -n 6), which take the fault groups' workers over as
# they end.
FAULT_GROUPS = 3


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Iterator[None]:
    """The fault tests (real processes, timing bounds) run in FAULT_GROUPS groups, one test
    at a time in each, on xdist workers of their own (xdist schedules the largest groups
    first, one to a worker); the rest run beside them and after (pyproject's addopts:
    ``-n 6 --dist loadgroup``). Whole files go to the groups by their measured duration
    (tests/fault_groups.py). Marked before xdist's own hook of this name reads the marks on
    each worker; after it, the groups go into the node ids if xdist could not put them there
    (tests/xdist_groups.py)."""
    faults = [item for item in items if item.get_closest_marker("faults") is not None]
    group_of = fault_groups.assign((item.nodeid for item in faults), FAULT_GROUPS)
    for item in faults:
        group = group_of[fault_groups.file_of(item.nodeid)]
        item.add_marker(pytest.mark.xdist_group(f"faults-{group}"))
    yield
    xdist_groups.put_groups_in_node_ids(config, items)


# --- Redis -----------------------------------------------------------------------------


REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CLUSTER = {"cluster": True, "shards": 16}  # the config's redis section on a Redis Cluster
REDIS_KINDS = ("redis", "cluster")


@pytest.hookimpl(trylast=True)  # after the parametrize marks: test_x[grant-cluster]
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``cluster`` runs twice, on the shared single Redis (``[redis]``) and on
    this worker's private Redis Cluster (``[cluster]``); one marked ``cluster(only=True)``
    runs on the cluster alone. The ``redis_kind`` fixture says which, and ``make_state``,
    ``state`` and ``slack_app`` (and whatever builds on them) follow it, so a scenario
    written for a single Redis runs unchanged on the cluster: any step that touched keys
    of two slots fails there with Redis's CROSSSLOT error."""
    marker = metafunc.definition.get_closest_marker("cluster")
    if marker is None:
        return
    kinds = ["cluster"] if marker.kwargs.get("only") else list(REDIS_KINDS)
    metafunc.parametrize("redis_kind", kinds, ids=kinds)


@pytest.fixture(autouse=True)
def redis_kind() -> str:
    """Which Redis this test's ``make_state``, ``state`` and ``slack_app`` are on:
    ``"redis"``, unless the test is marked ``cluster`` (pytest_generate_tests parametrizes
    this fixture). Autouse, so a marked test that asks for none of them (a property test
    that never touches Redis) can still be parametrized."""
    return "redis"


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[PrivateRedisCluster]:
    """A private Redis Cluster of three primaries (``redis.cluster: true``, its URL naming one
    node), started for the first test of this worker that needs it (it starts in about 2 s)
    and shared by the rest."""
    with PrivateRedisCluster() as cluster:
        yield cluster


@dataclass(frozen=True)
class RedisUnderTest:
    """Where this test's app and states keep their keys: a URL and more of the config's
    ``redis`` section (``cluster: true`` on the cluster)."""

    url: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def cluster(self) -> bool:
        return bool(self.settings.get("cluster"))


@pytest.fixture
def redis_under_test(redis_kind: str, request: pytest.FixtureRequest) -> RedisUnderTest:
    """The shared test Redis, or this worker's Redis Cluster for a test run on the cluster
    (started only then; a module may override ``redis_cluster`` with a cluster of its own)."""
    if redis_kind == "cluster":
        cluster: PrivateRedisCluster = request.getfixturevalue("redis_cluster")
        return RedisUnderTest(cluster.url, CLUSTER)
    assert redis_kind == "redis", redis_kind
    return RedisUnderTest(REDIS_URL)


def config_with_prefix(prefix: str, **sections: Any) -> AppConfig:
    data: dict[str, Any] = {"redis": {"key_prefix": prefix}}
    data.update(sections)
    return AppConfig.model_validate(data)


@pytest.fixture
def key_prefix() -> str:
    return f"test:{uuid.uuid4().hex[:12]}:"


@pytest.fixture
async def make_state(
    key_prefix: str, redis_under_test: RedisUnderTest
) -> AsyncIterator[Callable[..., State]]:
    """States on the test's Redis (``redis_under_test``), under this test's own prefix;
    cleaned up after (on the cluster, which is private, nothing to clean up but the
    connections)."""
    made: list[State] = []
    redis = redis_under_test

    def make(url: str | None = redis.url, **sections: Any) -> State:
        if redis.cluster:
            settings = {"key_prefix": key_prefix, **redis.settings, **sections.pop("redis", {})}
            sections["redis"] = settings
        state = open_state(url, config_with_prefix(key_prefix, **sections))
        made.append(state)
        return state

    yield make
    for state in made:
        if not redis.cluster:
            try:
                keys = [key async for key in state.client.scan_iter(match=f"{key_prefix}*")]
                if keys:
                    await state.client.delete(*keys)
            except Exception:  # a test's private server may be gone already
                pass
        await state.aclose()


@pytest.fixture
async def state(make_state: Callable[..., State]) -> State:
    return make_state()


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    server.start()
    try:
        yield server
    finally:
        server.close()


# --- Slack -----------------------------------------------------------------------------


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def slack_app(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    key_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_state: Callable[..., State],
    redis_under_test: RedisUnderTest,
) -> AsyncIterator[SlackHarness]:
    """The app on the test's Redis (``redis_under_test``), not yet started: call
    ``await slack_app.start(**config)``."""
    redis = redis_under_test
    if not redis.cluster:
        make_state()  # so this test's keys are cleaned up afterwards
    harness = SlackHarness(
        fake_slack, fake_llm, redis.url, key_prefix, tmp_path, monkeypatch, redis.settings
    )
    try:
        yield harness
    finally:
        await harness.stop()


# --- MCP -------------------------------------------------------------------------------


@pytest.fixture
def http_mcp_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer()
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def sse_mcp_server() -> Iterator[HttpMcpServer]:
    """The test server over the legacy SSE transport only."""
    server = HttpMcpServer("sse")
    server.start()
    try:
        yield server
    finally:
        server.kill()
