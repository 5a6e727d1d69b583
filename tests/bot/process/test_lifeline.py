"""A worker process dies with its supervisor: the lifeline pipe's end closes, it kills
itself at once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from bot.config.errors import ConfigError
from bot.process.lifeline import Lifeline, hold_on

HOLDER = """
import sys, time
from bot.process.lifeline import hold_on
hold_on(int(sys.argv[1]))
print("holding", flush=True)
time.sleep(60)
"""


async def test_a_holder_dies_when_the_lifeline_closes() -> None:
    lifeline = Lifeline()
    try:
        holder = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            HOLDER,
            str(lifeline.read_fd),
            pass_fds=(lifeline.read_fd,),
            stdout=asyncio.subprocess.PIPE,
        )
        assert holder.stdout is not None
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"holding\n"
    finally:
        lifeline.close()  # as when the supervisor dies, however it dies
    assert await asyncio.wait_for(holder.wait(), 10) == -signal.SIGKILL


def test_a_descriptor_that_is_not_open_is_a_config_error() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    os.close(write_fd)
    with pytest.raises(ConfigError, match=rf"^--supervisor-pipe {read_fd}: no such open"):
        hold_on(read_fd)


async def test_a_worker_process_holds_on_before_it_loads_the_app() -> None:
    """A supervisor killed while its worker process is still starting: the worker dies
    before the app (the config's schema, the openai SDK, Bolt) has finished loading, not a
    start-up later. ``-X importtime`` prints each module as its import completes."""
    lifeline = Lifeline()
    try:
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "bot.cli",
            "worker",
            "--processes",
            "0",
            "--supervisor-pipe",
            str(lifeline.read_fd),
            pass_fds=(lifeline.read_fd,),
            stdin=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
    finally:
        lifeline.close()  # the supervisor is gone before its worker has started
    _, imports = await asyncio.wait_for(worker.communicate(), 30)
    assert worker.returncode == -signal.SIGKILL
    loaded = {line.rsplit("|", 1)[-1].strip() for line in imports.decode().splitlines()}
    assert "bot.process.lifeline" in loaded
    assert not loaded & {"bot.process.commands", "bot.config.schema", "openai", "slack_bolt"}
