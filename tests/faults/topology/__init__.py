"""The Redis a fault scenario's replicas keep their state in, and how it fails over.

Three topologies, chosen per scenario (``Cluster(..., topology=...)``) by their kind names
and made by :func:`make_topology`:

- ``single``: one private ``redis-server`` (tests/faults/topology/single.py), the default,
  as before;
- ``sentinel``: a private primary, one replica and three Sentinels
  (tests/faults/topology/sentinel.py);
- ``cluster``: a private Redis Cluster of three primaries with one replica each
  (tests/faults/topology/redis_cluster.py).

What they share (the harness's clients and reads, the failover watcher and its
``FailoverTimes``) is in tests/faults/topology/base.py.
"""

from __future__ import annotations

from tests.faults.topology.base import Topology
from tests.faults.topology.redis_cluster import ClusterTopology
from tests.faults.topology.sentinel import SentinelTopology
from tests.faults.topology.single import SingleTopology

SINGLE = SingleTopology.kind
SENTINEL = SentinelTopology.kind
REDIS_CLUSTER = ClusterTopology.kind
KINDS = (SINGLE, SENTINEL, REDIS_CLUSTER)


def make_topology(
    kind: str, *, persistent: bool = False, min_replicas_to_write: int = 0
) -> Topology:
    if kind == SINGLE:
        return SingleTopology(persistent=persistent)
    if persistent:
        raise ValueError(f"a persistent Redis is only offered on the {SINGLE} topology")
    if kind == SENTINEL:
        return SentinelTopology(min_replicas_to_write=min_replicas_to_write)
    if min_replicas_to_write:
        raise ValueError(f"min-replicas-to-write is only offered on the {SENTINEL} topology")
    if kind == REDIS_CLUSTER:
        return ClusterTopology()
    raise ValueError(f"no such Redis topology: {kind!r} (one of {', '.join(KINDS)})")
