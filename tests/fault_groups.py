"""Which xdist group each fault test runs in: whole files, shared out by their measured
duration so the groups take about as long as each other (tests/conftest.py marks them).

A file stays in one group, so a module-scoped fixture (a deployment shared by the file's
tests) is started once, on one worker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Seconds each file's fault tests took in a full run of the suite (-n 4 on 2 CPUs), rounded
# up. Only the balance matters: a file missing here counts UNLISTED_TEST_S a test.
MEASURED_S: Mapping[str, float] = {
    "tests/faults/test_schedules.py": 235,  # three consecutive minutes and a Redis restart
    "tests/faults/test_sign_in.py": 100,
    "tests/faults/test_slack_outage.py": 75,
    "tests/bot/process/test_worker_processes.py": 65,
    "tests/faults/test_partition.py": 65,
    "tests/faults/test_socket_mode.py": 65,
    "tests/faults/test_replica_kill.py": 60,
    "tests/faults/test_sentinel_failover.py": 45,
    "tests/faults/test_replica_sigterm.py": 40,
    "tests/faults/test_lock_loss.py": 32,
    "tests/bot/turn/test_schedules.py": 30,
    "tests/faults/test_cluster_failover.py": 25,
    "tests/faults/test_redis_restart.py": 25,
    "tests/bot/cluster/test_failover_on_cluster.py": 15,
    "tests/faults/test_harness.py": 15,
    "tests/bot/cluster/test_processes_on_cluster.py": 10,
    "tests/faults/test_approved_call_crash.py": 10,
    "tests/faults/test_late_redelivery.py": 10,
    "tests/faults/test_budget_concurrency.py": 5,
    "tests/faults/test_invariants.py": 1,
}
UNLISTED_TEST_S = 15.0  # a fault test not measured yet: about a scenario's length


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def estimate_s(nodeids: Iterable[str]) -> dict[str, float]:
    """Each file's expected seconds: measured, or UNLISTED_TEST_S for each of its tests."""
    counts: dict[str, int] = {}
    for nodeid in nodeids:
        counts[file_of(nodeid)] = counts.get(file_of(nodeid), 0) + 1
    return {name: MEASURED_S.get(name, UNLISTED_TEST_S * n) for name, n in counts.items()}


def assign(nodeids: Iterable[str], groups: int) -> dict[str, int]:
    """The group of each test's file: the longest file first, each to the group with the
    least so far (ties to the lowest group, by file name next: the same on every worker)."""
    estimates = estimate_s(nodeids)
    totals = [0.0] * groups
    group_of: dict[str, int] = {}
    for name in sorted(estimates, key=lambda n: (-estimates[n], n)):
        group = min(range(groups), key=lambda g: (totals[g], g))
        group_of[name] = group
        totals[group] += estimates[name]
    return group_of
