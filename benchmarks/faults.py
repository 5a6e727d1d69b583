"""Fault scenarios under more traffic than the tests: real `slack-agent run` replicas on a
private Redis (started here, on free ports; no other Redis is touched), the fake Slack and
the fake LLM in this process, and a router delivering events the way Slack does, with a
share of duplicate deliveries. Each scenario injects its fault while people write, waits
for the system to settle, probes every thread's history, and checks the invariants from
outside (see tests/faults/invariants.py).

Prints one row per scenario: messages sent, answered exactly once, duplicated, lost, out of
order, and the time from the fault's end to the last answer; then what else failed.

Run: uv run python -m benchmarks.faults [--replicas 3] [--threads 20] [--messages 3]
     [--duplicates 0.3] [--scenario NAME ...] [--all] [--verbose]

By default the main variant of each fault runs (a few minutes); --all adds the others.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from tests.faults.cluster import Cluster
from tests.faults.invariants import Report
from tests.faults.scenarios import Scenario, Traffic
from tests.faults.scenarios.late_redelivery import late_redelivery
from tests.faults.scenarios.lock_loss import lose_lock
from tests.faults.scenarios.redis_restart import redis_restart
from tests.faults.scenarios.replica_kill import kill_mid_stream, kill_mid_tool
from tests.faults.scenarios.replica_sigterm import sigterm_long_turn
from tests.faults.scenarios.slack_outage import slack_outage

MAIN: dict[str, Scenario] = {
    "slack-outage": partial(slack_outage, streaming=True),
    "redis-restart": redis_restart,
    "kill-mid-tool": kill_mid_tool,
    "kill-mid-stream": kill_mid_stream,
    "sigterm": partial(sigterm_long_turn, stuck_sync=False),
    "lock-deleted": partial(lose_lock, overwrite=False),
    "late-redelivery": late_redelivery,
}
OTHERS: dict[str, Scenario] = {
    "slack-outage-posting": partial(slack_outage, streaming=False),
    "sigterm-stuck-sync": partial(sigterm_long_turn, stuck_sync=True),
    "lock-overwritten": partial(lose_lock, overwrite=True),
}
SCENARIOS = {**MAIN, **OTHERS}
BUDGET_S = 100.0  # per scenario, start-up included
COLUMNS = ("scenario", "sent", "answered once", "duplicated", "lost", "out of order", "recover s")


async def run_one(name: str, scenario: Scenario, traffic: Traffic, directory: Path) -> Report:
    made: list[Cluster] = []

    def make(scenario: str, **options: Any) -> Cluster:
        cluster = Cluster(directory / name, scenario, **options)
        made.append(cluster)
        return cluster

    try:
        return await scenario(make, traffic)
    finally:
        for cluster in made:
            cluster.kill_now()


def row(name: str, report: Report | None, error: str = "") -> str:
    if report is None:
        return f"{name:<22} {'error: ' + error}"
    recover = "never" if report.recover_s is None else f"{report.recover_s:.1f}"
    cells = (
        report.sent + report.probes,
        report.answered_once,
        report.duplicated,
        report.lost,
        report.out_of_order,
    )
    return f"{name:<22} " + " ".join(f"{c:>13}" for c in cells) + f" {recover:>10}"


def other_failures(report: Report) -> list[str]:
    found = [
        f"{len(problems)} {title}"
        for title, problems in (
            ("misplaced", report.misplaced),
            ("left behind", report.left_behind),
            ("history problems", report.history),
            ("metadata problems", report.metadata),
            ("tool reruns", report.tools),
        )
        if problems
    ]
    if report.order:
        found.append(f"order broken in {len(report.order)} threads, e.g. {report.order[0]}")
    found += [f"{c.name}: {c.detail or 'failed'}" for c in report.checks if not c.ok]
    return found


async def main(names: list[str], traffic: Traffic, verbose: bool) -> int:
    directory = Path(tempfile.mkdtemp(prefix="slack-agent-faults-"))
    print(
        f"{traffic.replicas} replicas, {traffic.threads} threads x {traffic.messages} messages, "
        f"{traffic.duplicates:.0%} duplicate deliveries (sent counts one probe per thread)"
    )
    header = " ".join(f"{c:>13}" for c in COLUMNS[1:-1])
    print(f"{COLUMNS[0]:<22} {header} {COLUMNS[-1]:>10}")
    reports: dict[str, Report] = {}
    started = time.monotonic()
    try:
        for name in names:
            try:
                report = await run_one(name, SCENARIOS[name], traffic, directory)
            except Exception as exc:
                print(row(name, None, f"{type(exc).__name__}: {exc}".splitlines()[0]), flush=True)
                continue
            reports[name] = report
            print(row(name, report), flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"({time.monotonic() - started:.0f} s in all)")
    for name, report in reports.items():
        if verbose:
            print("\n" + report.text())
        elif not report.ok:
            print(f"{name}: " + "; ".join(other_failures(report)))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--messages", type=int, default=3)
    parser.add_argument("--duplicates", type=float, default=0.3)
    parser.add_argument(
        "--scenario", action="append", choices=sorted(SCENARIOS), help="run only these"
    )
    parser.add_argument("--all", action="store_true", help="every variant, not just the main")
    parser.add_argument("--verbose", action="store_true", help="print every full report")
    args = parser.parse_args()
    chosen = args.scenario or list(SCENARIOS if args.all else MAIN)
    load = Traffic(
        threads=args.threads,
        messages=args.messages,
        duplicates=args.duplicates,
        replicas=args.replicas,
        budget_s=BUDGET_S,
    )
    sys.exit(asyncio.run(main(chosen, load, args.verbose)))
