"""The private Redis Cluster's node ports (tests/fakes/redis_cluster.py): below the kernel's
ephemeral range with their bus ports, and never one another's port or bus port."""

from __future__ import annotations

from tests.fakes.redis_cluster import BUS_OFFSET, EPHEMERAL_FROM, LOWEST_PORT, free_node_port


def test_node_ports_avoid_the_ephemeral_range_and_each_other() -> None:
    chosen: list[int] = []
    for _ in range(300):  # far more than a cluster's six: collisions would show
        port = free_node_port(chosen[-6:])
        assert port >= LOWEST_PORT and port + BUS_OFFSET < EPHEMERAL_FROM
        taken = {p + offset for p in chosen[-6:] for offset in (0, BUS_OFFSET)}
        assert port not in taken and port + BUS_OFFSET not in taken
        chosen.append(port)
