"""Tools for the fault tests: each run's start and finish is recorded in Redis.

A ``slack-agent run`` process loads this module (``tools: {modules: [...]}``). Each record is
pushed, as JSON, onto the list ``FAULT_RUNS_KEY`` of the Redis at ``FAULT_REDIS_URL``:
``{"name", "event": "start" | "finish", "pid", "at"}`` (``at`` is ``time.time()``), so the
test can tell which process ran what, and whether a finished step ran again. Recording is
best effort: while Redis is away the step still runs, unrecorded (the error goes to stderr).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import redis
import redis.asyncio

from tools import tool

RECORD_TIMEOUT_S = 1.0


def run_record(name: str, event: str) -> str:
    return json.dumps({"name": name, "event": event, "pid": os.getpid(), "at": time.time()})


def _where() -> tuple[str, str]:
    return os.environ["FAULT_REDIS_URL"], os.environ["FAULT_RUNS_KEY"]


async def _record(name: str, event: str) -> None:
    url, key = _where()
    client = redis.asyncio.Redis.from_url(
        url, socket_timeout=RECORD_TIMEOUT_S, socket_connect_timeout=RECORD_TIMEOUT_S
    )
    try:
        await client.rpush(key, run_record(name, event))
    except (redis.RedisError, OSError) as exc:
        print(f"fault_tools: could not record {event} of {name}: {exc!r}", file=sys.stderr)
    finally:
        await client.aclose()


def _record_sync(name: str, event: str) -> None:
    url, key = _where()
    client = redis.Redis.from_url(
        url, socket_timeout=RECORD_TIMEOUT_S, socket_connect_timeout=RECORD_TIMEOUT_S
    )
    try:
        client.rpush(key, run_record(name, event))
    except (redis.RedisError, OSError) as exc:
        print(f"fault_tools: could not record {event} of {name}: {exc!r}", file=sys.stderr)
    finally:
        client.close()


@tool
async def slow_step(name: str, seconds: float) -> str:
    """Take ``seconds`` to do the step called ``name``.

    Args:
        name: Which step this is.
        seconds: How long it takes.
    """
    await _record(name, "start")
    await asyncio.sleep(seconds)
    await _record(name, "finish")
    return f"step {name} done"


@tool
def sync_step(name: str, seconds: float) -> str:
    """Like slow_step, but blocking a thread the whole time (a stuck synchronous tool).

    Args:
        name: Which step this is.
        seconds: How long it takes.
    """
    _record_sync(name, "start")
    time.sleep(seconds)
    _record_sync(name, "finish")
    return f"step {name} done"
