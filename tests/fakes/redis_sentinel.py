"""A private Sentinel setup on free ports: a primary, one replica and one Sentinel (or
three, as deployed: ``sentinels=3``, quorum 2).

For tests of ``redis+sentinel://`` URLs (bot/state/redis/connection.py) and of a failover:
a graceful one (:meth:`PrivateSentinel.failover`, or :meth:`PrivateSentinel.request_failover`
that only asks for it), or the primary killed (:meth:`PrivateSentinel.kill`). Every wait
polls for a positive signal with a deadline. It never touches the machine's shared Redis on
6379.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
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


def _distinct_free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


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
    """A primary redis-server, a replica of it (``--replicaof``) and ``sentinels``
    Sentinels that monitor the pair as ``service`` (``quorum``: a majority of them unless
    given), each its own process on a free loopback port, with their files in one temporary
    directory. ``min_replicas_to_write``: the servers' ``min-replicas-to-write`` (with
    ``min-replicas-max-lag`` 10), 0 (off) by default.

    :attr:`primary_port` and :attr:`replica_port` follow the roles: :meth:`failover` swaps
    them, and so does :meth:`follow` after a failover it did not run itself.
    :attr:`sentinel_port` is the first Sentinel's; :attr:`url` names them all."""

    def __init__(
        self,
        service: str = "mymaster",
        *,
        sentinels: int = 1,
        quorum: int | None = None,
        min_replicas_to_write: int = 0,
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        if sentinels < 1:
            raise ValueError("a Sentinel setup needs a Sentinel")
        self.binary = binary
        self.service = service
        self.quorum = quorum or sentinels // 2 + 1
        self.min_replicas_to_write = min_replicas_to_write
        ports = _distinct_free_ports(2 + sentinels)
        self.primary_port, self.replica_port = ports[0], ports[1]
        self.sentinel_ports = ports[2:]
        self.directory = Path(tempfile.mkdtemp(prefix="slack-agent-sentinel-"))
        self.processes: list[subprocess.Popen[bytes]] = []
        self.servers: dict[int, subprocess.Popen[bytes]] = {}  # the redis-servers, by port

    @property
    def sentinel_port(self) -> int:
        return self.sentinel_ports[0]

    @property
    def url(self) -> str:
        """``redis+sentinel://`` naming every Sentinel, the service and database 0."""
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{self.service}/0"

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

    def primary_by_sentinel(self, sentinel_port: int | None = None) -> int | None:
        """The primary's port, as a Sentinel (the first unless ``sentinel_port``) says to
        SENTINEL MASTER (what redis-py asks), None while it knows no healthy one.
        Mid-failover, GET-MASTER-ADDR-BY-NAME already names the promoted replica while
        SENTINEL MASTER still names the old primary."""
        with self.client(sentinel_port or self.sentinel_port) as sentinel:
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

    def _sentinel_knows(self, primary: int, replica: int, sentinel_port: int | None = None) -> bool:
        """The Sentinel (the first unless ``sentinel_port``) names ``primary``, counts
        ``replica`` as a healthy replica of it (a failover needs one) and, with more than
        one Sentinel, knows every other Sentinel and can reach its quorum and a majority
        (SENTINEL CKQUORUM)."""
        port = sentinel_port or self.sentinel_port
        if self.primary_by_sentinel(port) != primary:
            return False
        with self.client(port) as sentinel:
            replicas = sentinel.sentinel_slaves(self.service)
            if len(self.sentinel_ports) > 1:
                state = sentinel.sentinel_master(self.service)
                if int(state["num-other-sentinels"]) != len(self.sentinel_ports) - 1:
                    return False
                # NOQUORUM (an error) until the Sentinels can reach quorum and majority.
                quorum = sentinel.execute_command("SENTINEL", "CKQUORUM", self.service)
                if not str(quorum).startswith("OK"):
                    return False
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
        if self.min_replicas_to_write:
            arguments += [
                "--min-replicas-to-write",
                str(self.min_replicas_to_write),
                "--min-replicas-max-lag",
                "10",
            ]
        process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(process)
        self.servers[port] = process

    def start(self) -> None:
        """Start the servers and the Sentinels, and wait until the replica is in sync and
        every Sentinel knows both servers (and, with more than one, the other Sentinels)."""
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
        for number, port in enumerate(self.sentinel_ports):
            # The first Sentinel's files keep the names they had when there was one only.
            name = "sentinel" if number == 0 else f"sentinel-{port}"
            config = self.directory / f"{name}.conf"  # Sentinel rewrites it: it must be writable
            config.write_text(
                f"port {port}\n"
                "bind 127.0.0.1\n"
                f"dir {self.directory}\n"
                f"logfile {self.directory / f'{name}.log'}\n"
                f"sentinel monitor {self.service} 127.0.0.1 {primary} {self.quorum}\n"
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
        # Sentinels find each other through the primary (a hello every 2 s).
        for port in self.sentinel_ports:
            _wait(
                f"the Sentinel on {port} knows the primary, its replica and the other Sentinels",
                partial(self._sentinel_knows, primary, replica, port),
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

    def request_failover(self, sentinel_port: int | None = None) -> None:
        """Send SENTINEL FAILOVER to one Sentinel (the first unless ``sentinel_port``) and
        return at once: the Sentinels promote the replica and, some 10 s later, demote the
        old primary. :meth:`follow` updates the ports once they have."""
        self._ask(sentinel_port or self.sentinel_port, "SENTINEL", "FAILOVER", self.service)

    def kill(self, port: int) -> None:
        """SIGKILL the redis-server on ``port`` (it is not restarted)."""
        process = self.servers.pop(port)
        process.kill()
        process.wait(10)
        self.processes.remove(process)

    def follow(self) -> bool:
        """Make :attr:`primary_port` the server every Sentinel names as the primary, and
        :attr:`replica_port` the other; False (nothing changed) while they do not agree."""
        named = {self.primary_by_sentinel(port) for port in self.sentinel_ports}
        if len(named) != 1 or None in named:
            return False
        [primary] = named
        if primary == self.replica_port:
            self.primary_port, self.replica_port = self.replica_port, self.primary_port
        return primary == self.primary_port

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
