"""Run the ``slack-agent`` command as a person would: a real process, with an environment
free of the machine's OPENAI_/SLACK_/REDIS_ variables unless a test gives them."""

from __future__ import annotations

import asyncio
import os
import sys


async def run_cli(
    *args: str, stdin: str = "", env: dict[str, str] | None = None, limit_s: float = 60
) -> tuple[int, str, str]:
    """Exit code, stdout and stderr. Without a REDIS_URL from the test the command uses its
    embedded Redis and never touches the shared server's default keys."""
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SLACK_", "REDIS_"))
    }
    environment.update(env or {})
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), limit_s)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
