"""The fault tests' xdist groups: whole files shared out by their measured duration
(tests/fault_groups.py), and the groups honoured by the workers (tests/xdist_groups.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.fault_groups import MEASURED_S, UNLISTED_TEST_S, assign, estimate_s

ROOT = Path(__file__).resolve().parent.parent


def test_files_are_shared_out_longest_first_to_the_group_with_least() -> None:
    files = {
        "tests/faults/test_sign_in.py": 4,
        "tests/faults/test_slack_outage.py": 3,
        "tests/faults/test_replica_kill.py": 3,
        "tests/faults/test_late_redelivery.py": 1,
        "tests/faults/test_new.py": 2,  # not measured: 2 x UNLISTED_TEST_S
    }
    nodeids = [f"{name}::test_{n}" for name, count in files.items() for n in range(count)]
    estimates = estimate_s(nodeids)
    assert estimates["tests/faults/test_new.py"] == 2 * UNLISTED_TEST_S
    assert estimates["tests/faults/test_sign_in.py"] == MEASURED_S["tests/faults/test_sign_in.py"]

    group_of = assign(reversed(nodeids), 2)  # the order of the tests does not matter
    assert group_of == assign(nodeids, 2)
    assert set(group_of) == set(files)  # a file is never split: one group each
    totals = [sum(estimates[f] for f, g in group_of.items() if g == group) for group in (0, 1)]
    assert group_of["tests/faults/test_sign_in.py"] == 0  # the longest, to the first group
    assert abs(totals[0] - totals[1]) <= max(estimates.values())


def test_more_groups_than_files_leave_groups_empty() -> None:
    assert assign(["tests/faults/test_partition.py::test_a"], 3) == {
        "tests/faults/test_partition.py": 0
    }


def test_the_workers_run_each_group_on_one_worker() -> None:
    """xdist runs every test of a fault group on one worker (its node ids carry the group),
    though the workers are free: were the marks dropped, the tests would be spread out."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    command = [sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider"]
    finished = subprocess.run(
        [*command, "tests/faults/test_invariants.py"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ran = re.findall(r"^\[(gw\d)\] .* PASSED (\S+)", finished.stdout, re.M)
    assert len(ran) >= 10, finished.stdout
    assert all(re.search(r"@faults-\d$", nodeid) for _, nodeid in ran), finished.stdout
    assert len({worker for worker, _ in ran}) == 1, finished.stdout
