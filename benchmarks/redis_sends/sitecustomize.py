"""Redis round trips of every process of the app, by command (``slack_turns --count-redis``).

`benchmarks/slack_turns.py --count-redis` puts this folder first on the app's PYTHONPATH, so
Python loads this module at start-up in the app and in each worker process it starts. With
BENCH_REDIS_SENDS naming a folder, it counts each write of packed commands redis-py makes
(one command, or one pipeline: one round trip) under the names of the commands it holds,
writes ``PID.ready`` there, and on SIGUSR2 writes the counts so far to ``PID.json``.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

SCRIPTS: dict[str, str] = {}  # a script's SHA1: where it was registered (file:line)


def command_names(packed: Any) -> str:
    """ "GET+GET+HGETALL" for a pipeline of those, "EVALSHA(records.py:209)" for a call of
    the script registered there, "GET*45" for 45 GETs in a row."""
    if isinstance(packed, str):
        packed = packed.encode()
    data = packed if isinstance(packed, bytes) else b"".join(bytes(part) for part in packed)
    names: list[str] = []
    at = 0
    while at < len(data):
        end = data.index(b"\r\n", at)
        arguments, at = int(data[at + 1 : end]), end + 2  # "*N"
        words = []
        for index in range(arguments):
            end = data.index(b"\r\n", at)
            size = int(data[at + 1 : end])  # "$size"
            if index < 2:
                words.append(data[end + 2 : end + 2 + size].decode(errors="replace"))
            at = end + 2 + size + 2
        name = words[0].upper()
        if name == "EVALSHA" and len(words) > 1:
            name += f"({SCRIPTS.get(words[1], words[1][:8])})"
        names.append(name)
    runs = []
    for name, run in itertools.groupby(names):
        length = len(list(run))
        runs.append(f"{name}*{length}" if length > 1 else name)
    return "+".join(runs)


def install(folder: Path) -> None:
    from redis.asyncio.connection import AbstractConnection
    from redis.commands.core import AsyncScript

    counts: collections.Counter[str] = collections.Counter()
    sending = AbstractConnection.send_packed_command
    registering = AsyncScript.__init__

    async def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        counts[command_names(command)] += 1
        await sending(self, command, check_health)

    def named(self: AsyncScript, registered_with: Any, script: Any) -> None:
        registering(self, registered_with, script)
        caller = sys._getframe(2)  # past register_script
        SCRIPTS[self.sha] = f"{Path(caller.f_code.co_filename).name}:{caller.f_lineno}"

    def dump(signum: int, frame: FrameType | None) -> None:
        pending = folder / f"{os.getpid()}.json.pending"
        pending.write_text(json.dumps(counts))
        pending.replace(folder / f"{os.getpid()}.json")

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
    AsyncScript.__init__ = named  # type: ignore[method-assign,assignment]
    signal.signal(signal.SIGUSR2, dump)
    (folder / f"{os.getpid()}.ready").touch()


if os.environ.get("BENCH_REDIS_SENDS"):
    install(Path(os.environ["BENCH_REDIS_SENDS"]))
