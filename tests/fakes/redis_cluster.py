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
from collections.abc import Iterable
from pathlib import Path

START_TIMEOUT_S = 20.0
BUS_OFFSET = 10_000  # a node's cluster bus listens on its port + 10000


# Below the kernel's ephemeral range (32768-60999 on Linux), bus port included: a port the
# kernel hands to an outgoing connection between our check and the node's bind would make
# the node exit at start.
LOWEST_PORT, EPHEMERAL_FROM = 10_000, 32_768
NODE_STARTS = 3  # a node whose port was taken after all is started again on another


def free_node_port(taken: Iterable[int] = ()) -> int:
    """A free port whose cluster bus port is free too, both below the ephemeral range, and
    neither of them one of ``taken``'s nodes' ports or bus ports."""
    used = {p + offset for p in taken for offset in (0, BUS_OFFSET)}
    for _ in range(200):
        port = random.randrange(LOWEST_PORT, EPHEMERAL_FROM - BUS_OFFSET)
        if port in used or port + BUS_OFFSET in used:
            continue
        try:
            with socket.socket() as node, socket.socket() as bus:
                node.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + BUS_OFFSET))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports for a cluster node")


class PrivateRedisCluster:
    """``replicas``: replicas per primary (a killed primary's replica takes over)."""

    def __init__(self, primaries: int = 3, replicas: int = 0) -> None:
        server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if server is None or cli is None:
            raise RuntimeError("redis-server and redis-cli are needed for a Redis Cluster")
        self.server, self.cli = server, cli
        self.replicas = replicas
        self.ports: list[int] = []
        for _ in range(primaries * (1 + replicas)):
            self.ports.append(free_node_port(self.ports))
        self.directory = Path(tempfile.mkdtemp(prefix="slack-agent-cluster-"))
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """One node's URL: the bot finds the others from it."""
        return f"redis://127.0.0.1:{self.ports[1]}/0"

    def start(self) -> None:
        for port in self.ports:
            self._start_node(port)
        for index in range(len(self.ports)):
            self._node_up(index)
        subprocess.run(
            [
                self.cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in self.ports),
                "--cluster-replicas",
                str(self.replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT_S,
        )
        for port in self.ports:  # every node agrees the cluster is whole
            self._wait_for(port, ["CLUSTER", "INFO"], "cluster_state:ok")
        if self.replicas:  # and every primary has its replicas, in sync
            primaries = len(self.ports) // (1 + self.replicas)
            deadline = time.monotonic() + START_TIMEOUT_S
            while not self._replicated(primaries):
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster's replicas never caught up")
                time.sleep(0.05)

    def _start_node(self, port: int) -> None:
        node = self.directory / str(port)
        node.mkdir()
        self.processes[port] = subprocess.Popen(
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

    def _node_up(self, index: int) -> None:
        """Wait until the node at ``self.ports[index]`` answers; one that exited (its port
        was taken after all) starts again on another port, up to NODE_STARTS times."""
        for _ in range(NODE_STARTS):
            port = self.ports[index]
            process = self.processes[port]
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline and process.poll() is None:
                reply = subprocess.run(
                    [self.cli, "-p", str(port), "PING"], capture_output=True, text=True, timeout=5
                )
                if "PONG" in reply.stdout and process.poll() is None:
                    return
                time.sleep(0.05)
            if process.poll() is None:
                break  # running, and never answered: not a taken port
            del self.processes[port]
            self.ports[index] = free_node_port(self.ports)
            self._start_node(self.ports[index])
        raise RuntimeError(f"cluster node {self.ports[index]} never answered 'PONG' to PING")

    def _replicated(self, primaries: int) -> bool:
        ports = self.primary_ports()
        if len(ports) != primaries:
            return False
        for port in ports:
            replicas = self.replication(port)[1]
            if [r["state"] for r in replicas] != ["online"] * self.replicas:  # synced, streaming
                return False
        return True

    def replication(self, port: int) -> tuple[int, list[dict[str, str]]]:
        """INFO replication of primary ``port``: its replication offset, and each replica's
        fields (state, offset: what it has acknowledged, ...)."""
        reply = subprocess.run(
            [self.cli, "-p", str(port), "INFO", "replication"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout
        fields = dict(line.split(":", 1) for line in reply.splitlines() if ":" in line)
        replicas = [
            dict(pair.split("=", 1) for pair in value.strip().split(","))
            for key, value in fields.items()
            if key.startswith("slave") and key[5:].isdigit()
        ]
        return int(fields["master_repl_offset"]), replicas

    def nodes(self, port: int | None = None) -> list[list[str]]:
        """CLUSTER NODES as one node sees it: a list of fields per node."""
        asked = port or next(p for p in self.ports if p in self.processes)
        reply = subprocess.run(
            [self.cli, "-p", str(asked), "CLUSTER", "NODES"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        return [line.split() for line in reply.stdout.splitlines() if line.strip()]

    def primary_ports(self) -> list[int]:
        return [
            int(fields[1].split("@")[0].rsplit(":", 1)[1])
            for fields in self.nodes()
            if "master" in fields[2] and "fail" not in fields[2]
        ]

    def primary_of(self, key: str) -> int:
        """The port of the primary serving ``key``'s slot now."""
        reply = subprocess.run(
            [self.cli, "-p", str(self.ports[0]), "CLUSTER", "KEYSLOT", key],
            capture_output=True,
            text=True,
            timeout=5,
        )
        slot = int(reply.stdout.strip())
        for fields in self.nodes():
            if "master" not in fields[2] or "fail" in fields[2]:
                continue
            for served in fields[8:]:
                low, _, high = served.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return int(fields[1].split("@")[0].rsplit(":", 1)[1])
        raise LookupError(f"no primary serves slot {slot}")

    def caught_up(self, port: int) -> None:
        """Wait until every replica of primary ``port`` has acknowledged each write the
        primary had taken when asked (Redis replicates asynchronously: what a primary took
        and had not yet sent on is lost with it when it dies)."""
        taken = self.replication(port)[0]
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            acked = [int(r["offset"]) for r in self.replication(port)[1]]
            if len(acked) == self.replicas and all(offset >= taken for offset in acked):
                return
            time.sleep(0.02)
        raise RuntimeError(f"the replicas of {port} never caught up with it")

    def kill(self, port: int) -> None:
        """SIGKILL one node."""
        process = self.processes.pop(port)
        process.kill()
        process.wait(10)

    def wait_for_failover(self, port: int) -> int:
        """After :meth:`kill` of primary ``port``: wait until a replica serves its slots and
        the cluster is whole again; return the new primary's port."""
        before = {int(f[1].split("@")[0].rsplit(":", 1)[1]): f for f in self.nodes()}
        replicas = [p for p, f in before.items() if "slave" in f[2] and f[3] == before[port][0]]
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for candidate in replicas:
                reply = subprocess.run(
                    [self.cli, "-p", str(candidate), "ROLE"],
                    capture_output=True,
                    text=True,
                    timeout=5,
                )
                if reply.stdout.startswith("master"):
                    for other in self.processes:
                        self._wait_for(other, ["CLUSTER", "INFO"], "cluster_state:ok")
                    return candidate
            time.sleep(0.05)
        raise RuntimeError(f"no replica of {port} took over")

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
        for port in self.primary_ports():
            reply = subprocess.run(
                [self.cli, "-p", str(port), "--scan", "--pattern", pattern],
                capture_output=True,
                text=True,
                timeout=10,
            )
            counts.append(len(reply.stdout.split()))
        return counts

    def __enter__(self) -> PrivateRedisCluster:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        for process in self.processes.values():
            process.kill()
        for process in self.processes.values():
            process.wait(10)
        shutil.rmtree(self.directory, ignore_errors=True)
