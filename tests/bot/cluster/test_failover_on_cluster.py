"""A primary of the cluster dies mid-conversation: its replica takes its slots over, and
every message is still answered once, in its thread, with the thread's history intact."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bot.state.redis.thread_key import ThreadKey
from tests.fakes.llm_server import FakeLLM, text
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import TEAM
from tests.waiting import until, until_true

THREADS = 8
REDELIVER_FOR_S = 30.0  # Slack retries a refused event for longer than this


@pytest.fixture
def redis_cluster() -> Iterator[PrivateRedisCluster]:
    """This test's own cluster (``slack_app`` runs on it: tests/conftest.py's
    ``redis_under_test``): three primaries, each with a replica to take over."""
    with PrivateRedisCluster(primaries=3, replicas=1) as cluster:
        yield cluster


def echo(request: dict[str, Any]) -> Any:
    """Answers what was asked last, and says how many questions it saw in the thread."""
    asked = [m["content"] for m in request["messages"] if m["role"] == "user"]
    return text(f"{asked[-1].split(': ', 1)[-1]} ({len(asked)} asked)")


async def delivered(app: SlackHarness, event: dict[str, Any]) -> int:
    """Post as Slack does: a refused event (503: Redis unreachable) is sent again; returns
    how many times it was refused."""
    envelope = app.envelope(event)
    deadline = time.monotonic() + REDELIVER_FOR_S
    retry: int | None = None
    while True:
        status, _ = await app.post(envelope, retry=retry)
        if status == 200:
            return retry or 0
        assert time.monotonic() < deadline, f"Slack would have given up: {status}"
        retry = (retry or 0) + 1
        await asyncio.sleep(0.5)


def answers(app: SlackHarness, thread: str) -> list[str]:
    return [m.shown for m in app.slack.thread("C0CHAN", thread) if m.user != "U0ALICE"]


@pytest.mark.faults
@pytest.mark.cluster(only=True)  # slack_app on this module's redis_cluster
async def test_a_primary_killed_mid_conversation_loses_no_message(
    slack_app: SlackHarness, fake_llm: FakeLLM, redis_cluster: PrivateRedisCluster
) -> None:
    fake_llm.otherwise = echo
    await slack_app.start(slack={"streaming": False})
    threads = [f"1000{n}.000001" for n in range(THREADS)]
    await asyncio.gather(*(delivered(slack_app, mention(f"q1 of {t}", t)) for t in threads))
    for thread in threads:
        await slack_app.answered("C0CHAN", thread, 1, within=20)

    # Kill the primary of the first thread's shard, and write on in every thread meanwhile.
    # Redis replicates asynchronously: what a primary took and had not yet sent to its
    # replica dies with it (docs/deploy.md, "During a failover"). So the primary goes once its
    # replica has what it had (killed at once on a loaded machine, the first answers'
    # histories were seen lost).
    shard = slack_app.state.keys.shards.of(_key(threads[0]))
    victim = redis_cluster.primary_of(slack_app.state.keys.turns(shard))
    await asyncio.to_thread(redis_cluster.caught_up, victim)
    redis_cluster.kill(victim)
    writing = asyncio.gather(
        *(delivered(slack_app, mention(f"q2 of {t}", f"{t[:-1]}2", thread_ts=t)) for t in threads)
    )
    await asyncio.to_thread(redis_cluster.wait_for_failover, victim)
    refused = await writing
    assert refused[0] > 0  # the first thread's shard was down until its replica took over

    def settled() -> bool:
        return all(len(answers(slack_app, t)) == 2 for t in threads)

    await until(settled, 40)

    async def drained() -> bool:
        return (await slack_app.state.threads.queue.depth())[0] == 0

    # An answer shows in Slack before its turn's last move leaves the queue, and after the
    # failover those moves may still be riding out the old topology: wait until nothing is
    # left (seen: 3 entries for about 1.5 s), then look at the threads again.
    await until_true(drained, 20)
    for thread in threads:
        assert answers(slack_app, thread) == [
            f"q1 of {thread} (1 asked)",
            f"q2 of {thread} (2 asked)",  # the history of the thread came through
        ], thread


def _key(thread_ts: str) -> ThreadKey:
    return ThreadKey(TEAM, "C0CHAN", thread_ts)
