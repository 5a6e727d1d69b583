"""A small deployment to break: a private Redis, N ``slack-agent run`` replicas, the fake
Slack and the fake LLM (in this process, on loopback), and a router delivering events the
way Slack does; started, and torn down whatever happened.

The private Redis is one server by default (``topology="single"``); ``"sentinel"`` gives
a primary, a replica and three Sentinels, ``"cluster"`` a Redis Cluster of three primaries
with a replica each (tests/faults/topology/). With ``partitionable``, each replica reaches
the one Redis through its own :class:`~tests.faults.proxy.CutProxy`.

Everything is torn down on exit, and the tails of the replicas' logs are printed when the
body failed; :meth:`Deployment.kill_now` is the loop-free safety net for a test that timed
out. What a scenario does with the deployment is :class:`~tests.faults.cluster.Cluster`'s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_harness import app_environment
from tests.fakes.slack_server import FakeSlack
from tests.faults.app_config import BASE_CONFIG, RUNS_KEY, merged, supported
from tests.faults.proxy import CutProxy
from tests.faults.replicas import Replica
from tests.faults.reporting import watch_answers
from tests.faults.router import RETRY_DELAYS_S, Router
from tests.faults.script import Answers, Plan, Question
from tests.faults.topology import SINGLE, make_topology
from tests.faults.topology.base import FailoverTimes
from tests.faults.topology.single import SingleTopology

START_TIMEOUT_S = 40.0


class Deployment:
    """The servers, the replicas and the fakes of one scenario, and their life cycle."""

    def __init__(
        self,
        directory: Path,
        scenario: str,
        *,
        replicas: int = 2,
        config: dict[str, Any] | None = None,
        plan: Callable[[Question], Plan] | None = None,
        persistent_redis: bool = False,
        partitionable: bool = False,
        topology: str = SINGLE,
        min_replicas_to_write: int = 0,
        retry_delays_s: Sequence[float] = RETRY_DELAYS_S,
        duplicates: float = 0.0,
        seed: int = 0,
        budget_s: float = 50.0,
    ) -> None:
        self.directory = directory
        self.scenario = scenario
        self.deadline = time.monotonic() + budget_s
        self.topology = make_topology(
            topology, persistent=persistent_redis, min_replicas_to_write=min_replicas_to_write
        )
        if partitionable and topology != SINGLE:
            raise ValueError("a partition cuts a replica off the one Redis: topology 'single'")
        self.config, self.notes = supported(
            merged(merged(BASE_CONFIG, self.topology.app_config()), config or {})
        )
        self.slack = FakeSlack()
        self.llm = FakeLLM()
        self.answers = Answers(plan) if plan is not None else Answers()
        self.llm.otherwise = self.answers
        self.replicas = [Replica(i, directory / f"replica-{i}.log") for i in range(1, replicas + 1)]
        # With ``partitionable``, each replica reaches Redis through its own proxy.
        self.proxies: dict[int, CutProxy] = {}
        self._partitionable = partitionable
        self.router = Router(
            self.slack,
            lambda: [r.port for r in self.replicas if r.up],
            retry_delays_s=retry_delays_s,
            duplicates=duplicates,
            seed=seed,
        )
        self._conversations: list[asyncio.Task[None]] = []
        self._started = False
        self.conversation_started: float | None = None  # time.monotonic() of converse()
        self.failover: FailoverTimes | None = None  # the last failover injected
        self.answered_at: dict[Question, float] = {}  # when each answer was first seen done
        self._answer_watch: asyncio.Task[None] | None = None

    @property
    def redis(self) -> PrivateRedis:
        """The one private Redis (topology "single" only)."""
        if not isinstance(self.topology, SingleTopology):
            raise TypeError(f"the scenario runs on a Redis {self.topology.kind}, not one server")
        return self.topology.server

    # --- life cycle ----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            print(self.logs())
        await self.stop()

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._started = True
        await self.slack.start()
        await self.llm.start()
        await asyncio.to_thread(self.topology.start)
        self._answer_watch = asyncio.create_task(watch_answers(self.slack, self.answered_at))
        path = self.directory / "agent.yaml"
        path.write_text(yaml.safe_dump(self.config))
        env = app_environment(
            self.slack.api_url,
            self.llm.base_url,
            self.topology.url,
            path,
            FAULT_RUNS_KEY=RUNS_KEY,
            LOG_LEVEL="INFO",
            **self.topology.recorder_env(),
        )
        for replica in self.replicas:
            # Slack and model calls counted per replica
            own = {"SLACK_BOT_TOKEN": replica.token, "OPENAI_API_KEY": replica.llm_key}
            if self._partitionable:
                proxy = CutProxy("127.0.0.1", self.redis.port)
                await proxy.start()
                self.proxies[replica.index] = proxy
                own["REDIS_URL"] = proxy.url
            await replica.start({**env, **own})
        await asyncio.gather(*(r.healthy(START_TIMEOUT_S) for r in self.replicas))

    async def stop(self) -> None:
        watchers = [*self._conversations, *([self._answer_watch] if self._answer_watch else [])]
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        await self.router.aclose()
        await asyncio.gather(*(r.kill() for r in self.replicas), return_exceptions=True)
        await asyncio.gather(*(p.stop() for p in self.proxies.values()), return_exceptions=True)
        await self.topology.aclose()
        if self._started:
            await self.llm.stop()
            await self.slack.stop()
        self.kill_now()

    def kill_now(self) -> None:
        """Kill every process and remove the Redis directories, without an event loop."""
        for replica in self.replicas:
            replica.kill_now()
        self.topology.close()

    def logs(self) -> str:
        parts = [f"--- {r.name}: last lines of {r.log_path}\n{r.tail()}" for r in self.replicas]
        return "\n".join(parts)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()
