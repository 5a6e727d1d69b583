"""Calls of one script made at about the same time go to Redis in one pipeline, and each
caller still gets its own reply or its own error, on a real Redis."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.exceptions
from redis.asyncio import Redis

from bot.state.redis.script_batch import ScriptBatch
from tests.fakes.redis_server import PrivateRedis

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")

# Sets KEYS[1] to ARGV[1] and returns it; an error reply when ARGV[1] is "fail".
SET_AND_ECHO = """
if ARGV[1] == 'fail' then return redis.error_reply('refused ' .. KEYS[1]) end
redis.call('SET', KEYS[1], ARGV[1], 'EX', 60)
return ARGV[1]
"""


class CountedPipelines:
    """Counts the pipelines a client opens."""

    def __init__(self, client: Redis) -> None:
        self.opened = 0
        self.original = client.pipeline

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.opened += 1
        return self.original(*args, **kwargs)


PREFIX = f"test:{uuid.uuid4().hex[:12]}:"  # this module's keys on the shared Redis


def key(name: str) -> str:
    return PREFIX + name


@pytest.fixture
async def client() -> AsyncIterator[Redis]:
    client = Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        yield client
    finally:
        keys = [k async for k in client.scan_iter(match=f"{PREFIX}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_calls_in_one_pass_share_one_pipeline_and_keep_their_replies(
    client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipelines = CountedPipelines(client)
    monkeypatch.setattr(client, "pipeline", pipelines)
    batch = ScriptBatch(client.register_script(SET_AND_ECHO))
    replies = await asyncio.gather(*(batch([key(f"k{n}")], [f"v{n}"]) for n in range(50)))
    assert replies == [f"v{n}" for n in range(50)]
    assert pipelines.opened == 1
    assert await client.get(key("k49")) == "v49"


async def test_a_burst_larger_than_a_batch_goes_in_several(
    client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipelines = CountedPipelines(client)
    monkeypatch.setattr(client, "pipeline", pipelines)
    batch = ScriptBatch(client.register_script(SET_AND_ECHO), max_size=16)
    replies = await asyncio.gather(*(batch([key(f"k{n}")], [n]) for n in range(40)))
    assert replies == [str(n) for n in range(40)]
    assert pipelines.opened == 3  # 16 + 16 + 8


async def test_an_error_reply_fails_only_its_own_call(client: Redis) -> None:
    batch = ScriptBatch(client.register_script(SET_AND_ECHO))
    replies = await asyncio.gather(
        batch([key("a")], ["one"]),
        batch([key("b")], ["fail"]),
        batch([key("c")], ["three"]),
        return_exceptions=True,
    )
    assert replies[0] == "one" and replies[2] == "three"
    assert isinstance(replies[1], redis.exceptions.ResponseError)
    assert "refused" in str(replies[1]) and key("b") in str(replies[1])


async def test_a_call_alone_is_sent_alone(client: Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    pipelines = CountedPipelines(client)
    monkeypatch.setattr(client, "pipeline", pipelines)
    batch = ScriptBatch(client.register_script(SET_AND_ECHO))
    assert await batch([key("alone")], ["x"]) == "x"
    with pytest.raises(redis.exceptions.ResponseError, match="refused"):
        await batch([key("alone")], ["fail"])
    assert pipelines.opened == 0


async def test_unbatched_every_call_goes_on_its_own(
    client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipelines = CountedPipelines(client)
    monkeypatch.setattr(client, "pipeline", pipelines)
    batch = ScriptBatch(client.register_script(SET_AND_ECHO), batched=False)
    replies = await asyncio.gather(*(batch([key(f"k{n}")], [n]) for n in range(5)))
    assert replies == ["0", "1", "2", "3", "4"] and pipelines.opened == 0


async def test_a_caller_that_stopped_waiting_before_the_send_is_left_out(client: Redis) -> None:
    batch = ScriptBatch(client.register_script(SET_AND_ECHO))
    gone = asyncio.create_task(batch([key("gone")], ["x"]))
    kept = asyncio.create_task(batch([key("kept")], ["y"]))
    await asyncio.sleep(0)  # both are waiting for the send
    gone.cancel()
    assert await kept == "y"
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert await client.get(key("gone")) is None


async def test_a_script_redis_forgot_is_loaded_and_its_calls_sent_again(
    private_redis: PrivateRedis,
) -> None:
    client = Redis.from_url(private_redis.url, decode_responses=True)
    try:
        batch = ScriptBatch(client.register_script(SET_AND_ECHO))
        assert list(await asyncio.gather(batch(["a"], ["1"]), batch(["b"], ["2"]))) == ["1", "2"]
        await client.script_flush()  # as after a restart without persistence
        replies = await asyncio.gather(*(batch([f"k{n}"], [n]) for n in range(10)))
        assert replies == [str(n) for n in range(10)]
        assert await client.get("k9") == "9"
    finally:
        await client.aclose()


async def test_redis_unreachable_fails_every_call_of_the_batch(
    private_redis: PrivateRedis,
) -> None:
    client = Redis.from_url(private_redis.url, decode_responses=True, socket_timeout=1)
    try:
        batch = ScriptBatch(client.register_script(SET_AND_ECHO))
        assert list(await asyncio.gather(batch(["a"], ["1"]), batch(["b"], ["2"]))) == ["1", "2"]
        private_redis.stop()
        replies = await asyncio.gather(
            *(batch([f"k{n}"], [n]) for n in range(5)), return_exceptions=True
        )
        assert all(isinstance(r, redis.exceptions.ConnectionError) for r in replies), replies
    finally:
        await client.aclose()
