"""One ``slack-agent run`` process: started with its own port and log file, checked through
/healthz, and stopped the ways a deployment stops things (SIGTERM, SIGKILL).

Each replica runs with ``--workers 0``: its worker loop in the same process, so the pid a
tool run records is the replica's, and killing the replica kills the turns it runs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import aiohttp

from tests.fakes.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]  # the repository: `python -m bot.cli` runs here
TAIL_LINES = 40
NOISE = (" INFO httpx",)  # a line per model request (httpx, httpx2)
TRACEBACK = "Traceback (most recent call last)"
NOT_THE_END = ("Traceback", "The above exception", "During handling of the above exception")


class Replica:
    def __init__(self, index: int, log_path: Path) -> None:
        self.index = index
        self.port = free_port()
        self.metrics_port = free_port()  # /metrics: not on Slack's port in HTTP mode
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None
        self.up = False  # a load balancer would send it events
        self.exited_at: float | None = None  # time.monotonic(), once it is known to be gone
        self._env: dict[str, str] = {}  # what it was last started with

    @property
    def token(self) -> str:
        """Its own bot token, so the fake Slack tells its calls from the others'."""
        return f"xoxb-replica-{self.index}"

    @property
    def llm_key(self) -> str:
        """Its own API key, so the fake LLM tells its calls from the others'."""
        return f"sk-replica-{self.index}"

    @property
    def name(self) -> str:
        return f"replica {self.index} (port {self.port}, pid {self.pid})"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def start(self, env: dict[str, str]) -> None:
        self._env = env
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot.cli",
                "run",
                "--workers",
                "0",
                "--port",
                str(self.port),
                "--metrics-port",
                str(self.metrics_port),
                cwd=ROOT,
                env={**env, "PYTHONUNBUFFERED": "1"},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )

    async def healthy(self, within_s: float) -> None:
        """Wait until /healthz answers with Redis reachable; then it takes events."""
        deadline = time.monotonic() + within_s
        rebinds = 2  # a free port taken by another process before this one bound it
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1)) as session:
            while True:
                if self.process is None or self.process.returncode is not None:
                    if rebinds and "address already in use" in self.tail():
                        rebinds -= 1
                        self.port, self.metrics_port = free_port(), free_port()
                        await self.start(self._env)
                        continue
                    raise RuntimeError(f"{self.name} exited at start-up:\n{self.tail()}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
                    url = f"http://127.0.0.1:{self.port}/healthz"
                    async with session.get(url) as response:
                        if response.status == 200 and (await response.json())["redis"] == "ok":
                            self.up = True
                            return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} did not come up:\n{self.tail()}")
                await asyncio.sleep(0.1)

    async def restart(self, within_s: float) -> None:
        """Start it again (after a kill) as it last ran, and wait until it is healthy."""
        self.exited_at = None
        await self.start(self._env)
        await self.healthy(within_s)

    async def wait_ready(self, ready: bool, within_s: float) -> bool:
        """Wait until /readyz says ``ready`` (200) or not (503); False if it did not say so
        within ``within_s``."""
        deadline = time.monotonic() + within_s
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1)) as session:
            while time.monotonic() < deadline:
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    url = f"http://127.0.0.1:{self.port}/readyz"
                    async with session.get(url) as response:
                        if (response.status == 200) == ready:
                            return True
                await asyncio.sleep(0.1)
        return False

    def freeze(self) -> None:
        """SIGSTOP: alive, holding its connections, doing nothing; no events sent to it."""
        self.up = False
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGCONT)
            self.up = True

    def signal(self, sig: signal.Signals) -> float:
        """Send ``sig`` (the load balancer stops sending it events); return when."""
        self.up = False
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(sig)
        return time.monotonic()

    async def exited(self, within_s: float) -> bool:
        """Wait up to ``within_s`` for the process to end; True if it did."""
        if self.process is None:
            return True
        try:
            await asyncio.wait_for(self.process.wait(), within_s)
        except TimeoutError:
            return False
        if self.exited_at is None:
            self.exited_at = time.monotonic()
        return True

    async def kill(self) -> None:
        """SIGKILL and reap it."""
        self.signal(signal.SIGKILL)
        if self.process is not None:
            await self.process.wait()
            if self.exited_at is None:
                self.exited_at = time.monotonic()

    def kill_now(self) -> None:
        """Kill without an event loop (clean-up after a failed or timed-out test)."""
        self.up = False
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):  # reaped already by asyncio
                os.waitpid(self.process.pid, 0)

    def tracebacks(self) -> list[str]:
        """The exception line ending each Python traceback in its log (one per traceback)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []
        found = []
        for start, line in enumerate(lines):
            if TRACEBACK not in line:
                continue
            ending = next(
                (
                    later.strip()
                    for later in lines[start + 1 :]
                    if later and not later[0].isspace() and not later.startswith(NOT_THE_END)
                ),
                "(cut off)",
            )
            found.append(ending[:160])
        return found

    def tail(self, lines: int = TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        kept = [line for line in text.splitlines() if not any(n in line for n in NOISE)]
        return "\n".join(kept[-lines:])
