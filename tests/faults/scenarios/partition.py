"""A replica cut off from Redis but alive (packets silently dropped, no reset): mid-tool,
mid-stream while Slack is slow to answer appends, and while events come in.

Expected: the other replica takes the long turn over once the cut-off replica's lease has
run out, there is exactly one whole answer and no stream left open, and the cut-off replica
makes no Slack call for that thread after the takeover (its calls are told apart by its own
bot token), not even once the network heals. After the heal it reports ready within
READY_S, and answers new work on its own. Every run of the long turn's tool steps is in the
audit log once (the cut-off owner's finished call too).
"""

from __future__ import annotations

import time

from tests.faults.cluster import Cluster
from tests.faults.invariants import Report
from tests.faults.replicas import Replica
from tests.faults.scenarios import ClusterFactory, Traffic, add_audit_checks, add_step_checks
from tests.faults.script import Plan, Question, Step
from tests.waiting import until

LOCK_TTL_S = 6.0  # a short lease, so the takeover comes within the test's minute
CONFIG = {"queue": {"lock_ttl_s": LOCK_TTL_S, "claim_idle_s": LOCK_TTL_S}}
TAKEOVER_S = 12.0
READY_S = 5.0  # after the heal, the cut-off replica is ready again within this
SERVES_S = 10.0  # and answers a new message on its own within this
LONG = Question("t1", 1)
QUICK = Plan(steps=(Step(0.5),), delay_s=0.1)
TAIL = (
    "This answer is written slowly, a few characters at a time, while Slack takes its time "
    "to answer every append, so that the replica writing it is cut off from Redis with an "
    "append in flight. The last words of it must be visible in the end: the whole answer."
)


def mid_tool_plan(question: Question) -> Plan:
    # The second step outlives the lease, so the cut-off owner is interrupted inside it.
    return Plan(steps=(Step(0.3), Step(9.0))) if question == LONG else QUICK


def mid_stream_plan(question: Question) -> Plan:
    if question == LONG:
        return Plan(steps=(Step(0.3),), tail=TAIL, text_piece=8, chunk_delay_s=0.1)
    return QUICK


async def cut_mid_tool(make: ClusterFactory, traffic: Traffic) -> Report:
    async with make(
        "cut-mid-tool", plan=mid_tool_plan, config=CONFIG, partitionable=True, **traffic.options()
    ) as cluster:
        _converse(cluster, traffic)
        running = await cluster.step_started(LONG.step_name(2))
        cut = cluster.replica_of(running.pid)
        cut_at = cluster.cut(cut)
        return await _heal_and_check(cluster, cut, cut_at, running.pid, step=running.name)


async def cut_mid_stream(make: ClusterFactory, traffic: Traffic) -> Report:
    config = {**CONFIG, "slack": {"streaming": True, "stream_buffer_chars": 16}}
    async with make(
        "cut-mid-stream",
        plan=mid_stream_plan,
        config=config,
        partitionable=True,
        **traffic.options(),
    ) as cluster:
        cluster.slack.method_latency_s["chat.appendStream"] = 1.0  # slow to answer appends
        _converse(cluster, traffic)
        ran = await cluster.step_started(LONG.step_name(1))  # names the replica of the turn
        cut = cluster.replica_of(ran.pid)
        await until(lambda: _append_in_flight(cluster, cut), timeout=20)
        cut_at = cluster.cut(cut)
        report = await _heal_and_check(cluster, cut, cut_at, ran.pid)
        thread = cluster.sent(LONG)
        final = [
            m
            for m in cluster.slack.thread(thread.channel, thread.thread_ts)
            if LONG.answer in m.shown and not m.streaming
        ]
        report.add(
            f"the whole answer to {LONG.text} is visible",
            any(TAIL[-60:] in m.shown for m in final),
            " | ".join(m.shown[-80:] for m in final) or "no finished answer",
        )
        return report


async def cut_during_ingress(make: ClusterFactory, traffic: Traffic) -> Report:
    async with make(
        "cut-during-ingress",
        plan=lambda _: QUICK,
        config=CONFIG,
        partitionable=True,
        **traffic.options(),
    ) as cluster:
        cut = cluster.replicas[0]
        cut_at = cluster.cut(cut)
        cluster.converse(traffic.threads, traffic.messages)
        await cut.wait_ready(False, within_s=10)  # it says so while it cannot reach Redis
        await cluster.conversations_written()
        await cluster.router.delivered(20)
        healed_at = cluster.heal(cut)
        refused = [a for a in cluster.router.attempts if a.port == cut.port and not a.accepted]
        ready_s = await _ready_again(cut, healed_at)
        report = await cluster.finish(healed_at)
        _add_ready(report, ready_s)
        report.add(
            "deliveries to the cut-off replica were refused, and Slack's retries went elsewhere",
            bool(refused),
            f"{len(refused)} refused by it during the cut",
        )
        report.add(
            "nothing was written for the cut-off replica's deliveries while it was cut off",
            not _calls_between(cluster, cut, cut_at + 1.0, healed_at),
            f"{len(_calls_between(cluster, cut, cut_at + 1.0, healed_at))} Slack calls",
        )
        return report


async def _heal_and_check(
    cluster: Cluster, cut: Replica, cut_at: float, cut_pid: int, *, step: str = ""
) -> Report:
    """The takeover, the answer, the heal, the checks."""
    thread = cluster.sent(LONG)
    await until(lambda: _answered(cluster, LONG), timeout=40)  # by the other replica
    takeover_s = await cluster.takeover_s(LONG, cut_at, cut_pid)
    takeover_at = cut_at + (takeover_s if takeover_s is not None else 0.0)
    late_before_heal = cluster.slack_calls(cut, after=takeover_at, thread_ts=thread.thread_ts)
    healed_at = cluster.heal(cut)
    ready_s = await _ready_again(cut, healed_at)
    served_s = await _serves_on_its_own(cluster, cut)
    # Seconds after the heal, and before the probes give the thread new turns.
    late = cluster.slack_calls(cut, after=takeover_at, thread_ts=thread.thread_ts)
    report = await cluster.finish(healed_at)
    detail = "never" if takeover_s is None else f"{takeover_s:.1f} s"
    report.add(
        f"another replica took {LONG.text} over within {TAKEOVER_S:.0f} s",
        takeover_s is not None and takeover_s <= TAKEOVER_S,
        detail,
    )
    # The last renewal was at most a third of the TTL before the cut: the lock lives on.
    report.add(
        f"the takeover waited for the lock (at least {2 / 3 * LOCK_TTL_S:.0f} s after the cut)",
        takeover_s is not None and takeover_s >= 2 / 3 * LOCK_TTL_S,
        detail,
    )
    report.add(
        "the cut-off replica made no Slack call for its old turn after the takeover",
        not late,
        f"{len(late)} calls ({len(late_before_heal)} before the heal): "
        + ", ".join(f"{c.method} +{c.at - cut_at:.1f} s" for c in late[:5]),
    )
    _add_ready(report, ready_s)
    report.add(
        f"after the heal it answered a new message on its own within {SERVES_S:.0f} s",
        served_s is not None,
        "never" if served_s is None else f"{served_s:.1f} s",
    )
    if step:
        await add_step_checks(report, cluster, LONG.step_name(1), step, "the cut")
    # A call the cut-off owner finished and journaled was audited in that step; the one it
    # was running, as Interrupted by the next owner, which ran it again.
    await add_audit_checks(report, cluster, LONG)
    return report


def _converse(cluster: Cluster, traffic: Traffic) -> None:
    """The long question alone in its thread (so every later call there is about it), the
    others' threads busy around it."""
    cluster.write(LONG.thread)
    cluster.converse(traffic.threads - 1, traffic.messages, first=2)


def _append_in_flight(cluster: Cluster, replica: Replica) -> bool:
    """The replica's append to the long answer is with Slack, not answered yet."""
    thread = cluster.sent(LONG).thread_ts
    latency = cluster.slack.method_latency_s["chat.appendStream"]
    now = time.monotonic()
    return any(
        c.method == "chat.appendStream" and now - c.at < latency / 2
        for c in cluster.slack_calls(replica, after=now - latency, thread_ts=thread)
    )


def _answered(cluster: Cluster, question: Question) -> bool:
    sent = cluster.sent(question)
    return any(
        question.answer in m.shown and not m.streaming
        for m in cluster.slack.thread(sent.channel, sent.thread_ts)
    )


async def _ready_again(replica: Replica, healed_at: float) -> float | None:
    if not await replica.wait_ready(True, within_s=READY_S + 5):
        return None
    return time.monotonic() - healed_at


def _add_ready(report: Report, ready_s: float | None) -> None:
    report.add(
        f"the cut-off replica was ready again within {READY_S:.0f} s of the heal",
        ready_s is not None and ready_s <= READY_S,
        "never" if ready_s is None else f"{ready_s:.1f} s",
    )


async def _serves_on_its_own(cluster: Cluster, replica: Replica) -> float | None:
    """With every other replica frozen, a new message is acknowledged and answered by
    ``replica`` alone; the others are thawed again afterwards."""
    await cluster.settled(within_s=15)  # nobody holds a turn: freezing takes none away
    others = [r for r in cluster.replicas if r is not replica and r.up]
    for other in others:
        other.freeze()
    try:
        started = time.monotonic()
        sent = cluster.write("t99")
        try:
            await until(lambda: _answered(cluster, sent.question), timeout=SERVES_S)
        except AssertionError:
            return None
        answered_by = {
            c.token for c in cluster.slack_calls(replica, after=started, thread_ts=sent.thread_ts)
        }
        return time.monotonic() - started if answered_by == {replica.token} else None
    finally:
        for other in others:
            other.thaw()


def _calls_between(cluster: Cluster, replica: Replica, start: float, end: float) -> list[str]:
    return [
        c.method
        for c in cluster.slack.calls
        if c.token == replica.token and start < c.at < end and c.method != "auth.test"
    ]
