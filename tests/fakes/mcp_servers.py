"""Starting the test MCP server (tests/fakes/mcp_server.py) as a real process, over
streamable HTTP or SSE."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

from tests.fakes.redis_server import free_port


class HttpMcpServer:
    """``python -m tests.fakes.mcp_server http|sse PORT [OPTION...]`` that a test can kill and
    restart."""

    def __init__(self, transport: str = "http", *options: str) -> None:
        self.transport = transport
        self.options = options
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fakes.mcp_server",
                self.transport,
                str(self.port),
                *self.options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the MCP test server did not start")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None


def stdio_command(*options: str) -> tuple[str, list[str]]:
    return sys.executable, ["-m", "tests.fakes.mcp_server", "stdio", *options]
