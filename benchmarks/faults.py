"""Fault scenarios under more traffic than the tests: real `slack-agent run` replicas on a
private Redis (started here, on free ports; no other Redis is touched), the fake Slack and
the fake LLM in this process, and a router delivering events the way Slack does, with a
share of duplicate deliveries. Each scenario injects its fault while people write, waits
for the system to settle, probes every thread's history, and checks the invariants from
outside (see tests/faults/invariants.py).

Prints one row per scenario: messages sent, answered exactly once, duplicated, lost, out of
order, and the time from the fault's end to the last answer; then what else failed.

Run: uv run python -m benchmarks.faults [--replicas 3] [--threads 20] [--messages 3]
     [--duplicates 0.3] [--scenario NAME ...] [--all] [--verbose] [--keep]
     [--failovers [--failover-at 9] [--failover-gap 2.2]] [--runs 1]

By default the main variant of each fault runs (a few minutes); --all adds the others.

The Redis failovers (a graceful Sentinel failover, a Sentinel primary killed, a Redis
Cluster shard failed over: tests/faults/scenarios/redis_failover.py) run with --failovers,
with the traffic of the reported bug unless told otherwise: 2 replicas, 8 threads x 5
messages (40) written 2.2 s apart (--failover-gap), 30 % duplicate deliveries, the failover
9 s in (--failover-at); with --all, the graceful failover on servers with
min-replicas-to-write 1 too. --runs N runs each scenario N times (seeds 1..N), and a second
table gives, per run, the failover columns: the deliveries refused by status, the HTTP
500s, the tracebacks in the replicas' logs, and the time from the failover to the first
answer after it:

     uv run python -m benchmarks.faults --failovers --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from tests.faults.cluster import Cluster
from tests.faults.invariants import Report
from tests.faults.scenarios import Scenario, Traffic
from tests.faults.scenarios.late_redelivery import late_redelivery
from tests.faults.scenarios.lock_loss import lose_lock
from tests.faults.scenarios.redis_failover import (
    cluster_shard_failover,
    sentinel_crash_failover,
    sentinel_graceful_failover,
)
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
# The reported bug's setup: the failover 9 s in, people writing every 2.2 s in each thread
# (40 messages over 9.15 s: the fifth round is queued as the failover begins, and its turns
# run while the old primary still takes writes). With --failover-gap 2.5 the fifth round is
# written while it does.
FAILOVER_AT_S = 9.0
FAILOVER_GAP_S = 2.2
FAILOVER_TRAFFIC = {"replicas": 2, "threads": 8, "messages": 5, "duplicates": 0.3}
OTHER_TRAFFIC = {"replicas": 3, "threads": 20, "messages": 3, "duplicates": 0.3}


def failovers(at_s: float, gap_s: float = FAILOVER_GAP_S) -> dict[str, Scenario]:
    return {
        "sentinel-graceful": partial(sentinel_graceful_failover, at_s=at_s, gap_s=gap_s),
        "sentinel-crash": partial(sentinel_crash_failover, at_s=at_s, gap_s=gap_s),
        "cluster-shard": partial(cluster_shard_failover, at_s=at_s, gap_s=gap_s),
    }


def other_failovers(at_s: float, gap_s: float = FAILOVER_GAP_S) -> dict[str, Scenario]:
    return {
        # docs/deploy.md's advice: the servers refuse writes without a replica in sync.
        "sentinel-graceful-min-replicas": partial(
            sentinel_graceful_failover, at_s=at_s, gap_s=gap_s, min_replicas_to_write=1
        ),
    }


SCENARIOS = {**MAIN, **OTHERS, **failovers(FAILOVER_AT_S), **other_failovers(FAILOVER_AT_S)}
BUDGET_S = 100.0  # per scenario, start-up included
COLUMNS = ("scenario", "sent", "answered once", "duplicated", "lost", "out of order", "recover s")
FAILOVER_COLUMNS = (
    ("scenario", 31),
    ("run", 3),
    ("sent", 4),
    ("once", 4),
    ("dup", 3),
    ("lost", 4),
    ("ooo", 3),
    ("refused by status", 32),
    ("500s", 4),
    ("tracebacks", 10),
    ("1st answer s", 12),
)


async def run_one(name: str, scenario: Scenario, traffic: Traffic, directory: Path) -> Report:
    made: list[Cluster] = []

    def make(scenario: str, **options: Any) -> Cluster:
        cluster = Cluster(directory / f"{name}-{traffic.seed}", scenario, **options)
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


def failover_header() -> str:
    return " ".join(f"{title:<{width}}" for title, width in FAILOVER_COLUMNS)


def failover_row(name: str, run: int, report: Report) -> str:
    summary = report.summary
    if summary is None:
        return f"{name:<31} {run:<3} (no summary)"
    refused = sum(summary.refused.values())
    by_status = ", ".join(f"{status}: {n}" for status, n in sorted(summary.refused.items()))
    first = "none" if summary.first_answer_s is None else f"{summary.first_answer_s:.2f}"
    cells = (
        name,
        run,
        summary.sent,
        summary.answered_once,
        summary.duplicated,
        summary.lost,
        summary.out_of_order,
        f"{refused} ({by_status})" if by_status else "0",
        summary.http_500,
        summary.tracebacks,
        first,
    )
    return " ".join(
        f"{cell!s:<{width}}" for cell, (_, width) in zip(cells, FAILOVER_COLUMNS, strict=True)
    )


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


async def main(
    names: list[str],
    traffic: Traffic,
    verbose: bool,
    *,
    runs: int = 1,
    scenarios: dict[str, Scenario] | None = None,
    keep: bool = False,
) -> int:
    chosen = scenarios or SCENARIOS
    directory = Path(tempfile.mkdtemp(prefix="slack-agent-faults-"))
    print(
        f"{traffic.replicas} replicas, {traffic.threads} threads x {traffic.messages} messages, "
        f"{traffic.duplicates:.0%} duplicate deliveries (sent counts one probe per thread)"
        + (
            f", {runs} runs each (seeds {traffic.seed}..{traffic.seed + runs - 1})"
            if runs > 1
            else ""
        )
    )
    header = " ".join(f"{c:>13}" for c in COLUMNS[1:-1])
    print(f"{COLUMNS[0]:<22} {header} {COLUMNS[-1]:>10}")
    reports: list[tuple[str, int, Report]] = []
    started = time.monotonic()
    try:
        for name in names:
            for run in range(1, runs + 1):
                load = replace(traffic, seed=traffic.seed + run - 1)
                label = name if runs == 1 else f"{name} #{run}"
                try:
                    report = await run_one(name, chosen[name], load, directory)
                except Exception as exc:
                    print(
                        row(label, None, f"{type(exc).__name__}: {exc}".splitlines()[0]), flush=True
                    )
                    continue
                reports.append((name, run, report))
                print(row(label, report), flush=True)
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
    print(f"({time.monotonic() - started:.0f} s in all)")
    if keep:
        print(f"the replicas' logs are kept under {directory}")
    summarized = [(name, run, report) for name, run, report in reports if report.summary]
    if summarized:
        print("\nfailovers (the scenario's messages, no probes):")
        print(failover_header())
        for name, run, report in summarized:
            print(failover_row(name, run, report))
    for name, run, report in reports:
        label = name if runs == 1 else f"{name} #{run}"
        if verbose:
            print("\n" + report.text())
        elif not report.ok:
            print(f"{label}: " + "; ".join(other_failures(report)))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, help="3 (--failovers: 2)")
    parser.add_argument("--threads", type=int, help="20 (--failovers: 8)")
    parser.add_argument("--messages", type=int, help="3 (--failovers: 5)")
    parser.add_argument("--duplicates", type=float, help="0.3")
    parser.add_argument(
        "--scenario", action="append", choices=sorted(SCENARIOS), help="run only these"
    )
    parser.add_argument("--all", action="store_true", help="every variant, not just the main")
    parser.add_argument(
        "--failovers",
        action="store_true",
        help="the Redis failovers (Sentinel graceful and crash, a cluster shard), with the "
        "reported bug's traffic; with --all, their variants too",
    )
    parser.add_argument(
        "--failover-at",
        type=float,
        default=FAILOVER_AT_S,
        help=f"seconds into the conversation ({FAILOVER_AT_S:g})",
    )
    parser.add_argument(
        "--failover-gap",
        type=float,
        default=FAILOVER_GAP_S,
        help=f"seconds between two messages of a thread in the failovers ({FAILOVER_GAP_S:g})",
    )
    parser.add_argument("--runs", type=int, default=1, help="runs of each scenario")
    parser.add_argument("--verbose", action="store_true", help="print every full report")
    parser.add_argument(
        "--keep", action="store_true", help="keep the scenarios' directories (the replicas' logs)"
    )
    args = parser.parse_args()
    timing = (args.failover_at, args.failover_gap)
    by_name = {**SCENARIOS, **failovers(*timing), **other_failovers(*timing)}
    if args.scenario:
        picked = args.scenario
    elif args.failovers:
        picked = list(failovers(*timing)) + (list(other_failovers(*timing)) if args.all else [])
    else:
        picked = list(SCENARIOS if args.all else MAIN)
    defaults = FAILOVER_TRAFFIC if args.failovers else OTHER_TRAFFIC
    load = Traffic(
        threads=args.threads or int(defaults["threads"]),
        messages=args.messages or int(defaults["messages"]),
        duplicates=args.duplicates if args.duplicates is not None else defaults["duplicates"],
        replicas=args.replicas or int(defaults["replicas"]),
        budget_s=BUDGET_S,
    )
    sys.exit(
        asyncio.run(
            main(picked, load, args.verbose, runs=args.runs, scenarios=by_name, keep=args.keep)
        )
    )
