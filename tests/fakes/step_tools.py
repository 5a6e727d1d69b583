"""A tool that notes each run in Redis, for tests that kill a worker process mid-turn."""

from __future__ import annotations

import os
import time

import redis

from tools import tool


@tool
def step(name: str, wait: bool = False) -> str:
    """Record a run of ``name`` in Redis; with ``wait``, hold until the test releases it."""
    client = redis.Redis.from_url(os.environ["STEP_REDIS_URL"])
    runs_key = os.environ["STEP_RUNS_KEY"]
    try:
        client.rpush(runs_key, name)
        deadline = time.monotonic() + 60
        while wait and not client.exists(runs_key + ":release") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        client.close()
    return f"step {name} done"
