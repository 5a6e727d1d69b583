"""A private Sentinel setup on free ports: a primary, one replica and one Sentinel.

For tests of ``redis+sentinel://`` URLs (bot/state/redis/connection.py) and of a failover. Every
wait polls for a positive signal with a deadline. It never touches the machine's shared
Redis on 6379.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from tests.fakes.redis_server import free_port

START_TIMEOUT_S = 15.0
FAILOVER_TIMEOUT_S = 20.0
POLL_S = 0.05
WAIT_MS = 200  # one WAIT for the replica's acknowledgement, within a poll
PROBE_KEY = "private-sentinel:probe"  # written on the primary to see it replicated
# Sentinel timings, short so a test's failover takes seconds (the defaults: 30 s, 3 min).
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000


def _wait(what: str, ready: Callable[[], bool], timeout_s: float) -> None:
    """Poll ``ready`` until it is true; a connection error counts as not ready yet."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            pass
        time.sleep(POLL_S)
    raise RuntimeError(f"the private Sentinel setup: timed out waiting until {what}")


class PrivateSentinel:
    """A primary redis-server, a replica of it (``--replicaof``) and a Sentinel that
    monitors the pair as ``service`` (quorum 1), each its own process on a free loopback
    port, with their files in one temporary directory.

    :attr:`primary_port` and :attr:`replica_port` follow the roles: :meth:`failover` swaps
    them."""

    def __init__(self, service: str = "mymaster") -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.binary = binary
        self.service = service
        self.primary_port = free_port()
        self.replica_port = free_port()
        self.sentinel_port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="slack-agent-sentinel-"))
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.sentinel_port}/{self.service}/0"

    # --- direct clients (the caller closes them) -----------------------------------------

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1",
            port=port,
            decode_responses=True,
            socket_connect_timeout=1,
            socket_timeout=2,
        )

    def _ask(self, port: int, *command: str) -> Any:
        with self.client(port) as client:
            return client.execute_command(*command)

    def role(self, port: int) -> str:
        """What the server on ``port`` answers to ROLE: master or slave."""
        return str(self._ask(port, "ROLE")[0])

    def primary_by_sentinel(self) -> int | None:
        """The primary's port, as the Sentinel says to SENTINEL MASTER (what redis-py asks),
        None while it knows no healthy one. Mid-failover, GET-MASTER-ADDR-BY-NAME already
        names the promoted replica while SENTINEL MASTER still names the old primary."""
        with self.client(self.sentinel_port) as sentinel:
            state = sentinel.sentinel_master(self.service)
        healthy = state["is_master"] and not (state["is_sdown"] or state["is_odown"])
        return int(state["port"]) if healthy else None

    def _replica_in_sync(self, replica: int, primary: int) -> bool:
        """The replica replicates ``primary`` over a connected link (its ROLE), and has
        acknowledged a write just made on the primary (WAIT). A link that is up is not
        enough: after a diskless full sync the primary holds back its stream until the
        replica's first acknowledgement, up to a second later, and a failover before that
        loses every write in between."""
        role = self._ask(replica, "ROLE")
        if role[:4] != ["slave", "127.0.0.1", primary, "connected"]:
            return False
        with self.client(primary) as client:
            client.set(PROBE_KEY, "1")
            return int(client.wait(1, WAIT_MS)) >= 1

    def _sentinel_knows(self, primary: int, replica: int) -> bool:
        """The Sentinel names ``primary`` and counts ``replica`` as a healthy replica of it
        (a failover needs one)."""
        if self.primary_by_sentinel() != primary:
            return False
        with self.client(self.sentinel_port) as sentinel:
            replicas = sentinel.sentinel_slaves(self.service)
        return any(
            fields["port"] == replica
            and fields["flags"] == "slave"
            and fields["master-link-status"] == "ok"
            for fields in replicas
        )

    # --- lifecycle -----------------------------------------------------------------------

    def _server(self, port: int, *extra: str) -> None:
        name = f"redis-{port}"
        arguments = [
            self.binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.directory),
            "--dbfilename",
            f"{name}.rdb",
            # Sync a new replica at once (Redis waits 5 s by default for more to join).
            "--repl-diskless-sync-delay",
            "0",
            "--logfile",
            str(self.directory / f"{name}.log"),
            *extra,
        ]
        self.processes.append(
            subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )

    def start(self) -> None:
        """Start the three and wait until the replica is in sync and the Sentinel knows
        both servers."""
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        # One at a time, each once the one before is ready: a replica that finds no primary
        # tries again a second later, and a Sentinel learns the replicas from the primary's
        # INFO, which it asks for at once and then every 10 s.
        primary, replica = self.primary_port, self.replica_port
        self._server(primary)
        _wait("the primary answers PING", lambda: self._ask(primary, "PING") is True, 10)
        self._server(replica, "--replicaof", "127.0.0.1", str(primary))
        _wait(
            "the replica is in sync",
            lambda: self._replica_in_sync(replica, primary),
            START_TIMEOUT_S,
        )
        config = self.directory / "sentinel.conf"  # Sentinel rewrites it: it must be writable
        config.write_text(
            f"port {self.sentinel_port}\n"
            "bind 127.0.0.1\n"
            f"dir {self.directory}\n"
            f"logfile {self.directory / 'sentinel.log'}\n"
            f"sentinel monitor {self.service} 127.0.0.1 {primary} 1\n"
            f"sentinel down-after-milliseconds {self.service} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {self.service} {FAILOVER_TIMEOUT_MS}\n"
        )
        self.processes.append(
            subprocess.Popen(
                [self.binary, str(config), "--sentinel"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        _wait(
            "the Sentinel knows the primary and its replica",
            lambda: self._sentinel_knows(primary, replica),
            START_TIMEOUT_S,
        )

    def failover(self) -> None:
        """Wait until the replica has every write, run SENTINEL FAILOVER, and wait until
        the Sentinel names the replica as the primary and that server answers ROLE as
        master. The old primary is not waited for: the Sentinel turns it into a replica of
        the new one some 10 s later (:meth:`wait_demoted`)."""
        old, new = self.primary_port, self.replica_port
        # Every write made so far is on the replica first, so the failover loses none.
        _wait("the replica is in sync", lambda: self._replica_in_sync(new, old), FAILOVER_TIMEOUT_S)
        self._ask(self.sentinel_port, "SENTINEL", "FAILOVER", self.service)
        _wait(
            f"the Sentinel names {new} as the primary and it answers ROLE as master",
            lambda: self.primary_by_sentinel() == new and self.role(new) == "master",
            FAILOVER_TIMEOUT_S,
        )
        self.primary_port, self.replica_port = new, old

    def wait_demoted(self) -> None:
        """Wait until the old primary replicates the new one, in sync."""
        primary, replica = self.primary_port, self.replica_port
        _wait(
            f"{replica} replicates {primary}, in sync",
            lambda: self._replica_in_sync(replica, primary),
            FAILOVER_TIMEOUT_S,
        )

    def close(self) -> None:
        """Kill every process and remove the directory."""
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait(10)
        self.processes.clear()
        shutil.rmtree(self.directory, ignore_errors=True)
