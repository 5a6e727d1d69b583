"""A private redis-server on a free port, for tests that stop and restart Redis.

It never touches the machine's shared Redis on 6379. By default it keeps nothing on disk;
with ``persistent=True`` it writes an append-only file (``appendfsync always``), so a
graceful stop (:meth:`PrivateRedis.terminate`) and :meth:`PrivateRedis.start` on the same
port and directory bring every key back.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    def __init__(self, *, persistent: bool = False) -> None:
        self.persistent = persistent
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.binary = binary
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix="slack-agent-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or start again, on the same port and directory) and wait for PONG."""
        persistence = ["--appendonly", "yes", "--appendfsync", "always"]
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                *(persistence if self.persistent else ["--appendonly", "no"]),
                "--dir",
                self.directory,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)  # not up yet, or still loading its append-only file
        raise RuntimeError("the private redis-server did not start")

    @property
    def running(self) -> bool:
        return self.process is not None

    def stop(self) -> None:
        """Kill it (SIGKILL): whatever was not written yet is gone."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None

    def terminate(self) -> None:
        """Stop it gracefully (SIGTERM): Redis finishes writing its append-only file."""
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
