"""A private Redis Cluster of three primaries on free ports, for the cluster-mode tests.

Started with ``redis-server --cluster-enabled yes`` and joined with ``redis-cli --cluster
create``, as an operator would; it never touches the machine's shared Redis on 6379.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 20.0
BUS_OFFSET = 10_000  # a node's cluster bus listens on its port + 10000


def free_node_port() -> int:
    """A free port whose cluster bus port is free too (and below 65536)."""
    for _ in range(200):
        port = random.randrange(20_000, 45_000)
        try:
            with socket.socket() as node, socket.socket() as bus:
                node.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + BUS_OFFSET))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports for a cluster node")


class PrivateRedisCluster:
    def __init__(self, primaries: int = 3) -> None:
        server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if server is None or cli is None:
            raise RuntimeError("redis-server and redis-cli are needed for a Redis Cluster")
        self.server, self.cli = server, cli
        self.ports = [free_node_port() for _ in range(primaries)]
        self.directory = Path(tempfile.mkdtemp(prefix="slack-agent-cluster-"))
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        """One node's URL: the bot finds the others from it."""
        return f"redis://127.0.0.1:{self.ports[1]}/0"

    def start(self) -> None:
        for port in self.ports:
            node = self.directory / str(port)
            node.mkdir()
            self.processes.append(
                subprocess.Popen(
                    [
                        self.server,
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "2000",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        str(node),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port in self.ports:
            self._wait_for(port, ["PING"], "PONG")
        subprocess.run(
            [
                self.cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in self.ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT_S,
        )
        for port in self.ports:  # every node agrees the cluster is whole
            self._wait_for(port, ["CLUSTER", "INFO"], "cluster_state:ok")

    def _wait_for(self, port: int, command: list[str], expected: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            reply = subprocess.run(
                [self.cli, "-p", str(port), *command], capture_output=True, text=True, timeout=5
            )
            if expected in reply.stdout:
                return
            time.sleep(0.05)
        raise RuntimeError(f"cluster node {port} never answered {expected!r} to {command}")

    def keys_per_node(self, pattern: str) -> list[int]:
        """How many keys matching ``pattern`` each primary holds."""
        counts = []
        for port in self.ports:
            reply = subprocess.run(
                [self.cli, "-p", str(port), "--scan", "--pattern", pattern],
                capture_output=True,
                text=True,
                timeout=10,
            )
            counts.append(len(reply.stdout.split()))
        return counts

    def close(self) -> None:
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait(10)
        shutil.rmtree(self.directory, ignore_errors=True)
