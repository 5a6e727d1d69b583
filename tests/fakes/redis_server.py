"""A private redis-server on a free port, for tests that stop and restart Redis.

It never touches the machine's shared Redis on 6379.
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
    """``appendonly``: keep an append-only file written at every command (persistence that
    survives a restart on the same port and directory), off by default.
    ``config_command``: False renames CONFIG away, as managed Redis services do.
    ``password``: ``requirepass`` (the URL carries it)."""

    def __init__(
        self, *, appendonly: bool = False, config_command: bool = True, password: str = ""
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.binary = binary
        self.appendonly = appendonly
        self.config_command = config_command
        self.password = password
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix="slack-agent-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        credentials = f":{self.password}@" if self.password else ""
        return f"redis://{credentials}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or start again, on the same port and directory) and wait for PONG."""
        persistence = ["--appendonly", "yes", "--appendfsync", "always"]
        arguments = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            *(persistence if self.appendonly else ["--appendonly", "no"]),
            "--dir",
            self.directory,
        ]
        if not self.config_command:
            arguments += ["--rename-command", "CONFIG", ""]
        if self.password:
            arguments += ["--requirepass", self.password]
        self.process = subprocess.Popen(
            arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    if self.password:
                        sock.sendall(f"AUTH {self.password}\r\n".encode())
                        if not sock.recv(16).startswith(b"+OK"):
                            raise OSError("not ready")
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

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections are accepted, nothing is answered."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

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
