"""A worker in its own process, so a test can kill it with SIGKILL mid-turn.

Usage: python -m tests.fakes.worker_process REDIS_URL KEY_PREFIX LLM_BASE_URL
Deliveries are pushed to the Redis list KEY_PREFIX + "delivered".
"""

from __future__ import annotations

import asyncio
import sys

from tests.fakes.worker_kit import build_worker


async def main(redis_url: str, prefix: str, llm_base_url: str) -> None:
    worker, _ = build_worker(redis_url, prefix, llm_base_url, name="doomed")
    await worker.run(asyncio.Event())  # runs until killed


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
