"""The scenario's :class:`~tests.faults.invariants.Report`, from what the harness saw: the
usual checks (once, in order, nothing refused after the fault, Slack gave up on nothing),
and what a failover scenario checks besides (no HTTP 500, no traceback in any replica's log,
the first answer after the failover, watched for as the answers come in) with its
summary line."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from tests.fakes.llm_server import FakeLLM
from tests.fakes.slack_server import FakeSlack
from tests.faults.invariants import Report, Run, Summary, check, first_asked, sessions_left
from tests.faults.replicas import Replica
from tests.faults.router import Router
from tests.faults.script import Question, answers_in
from tests.faults.topology.base import FailoverTimes

REFUSAL_GRACE_S = 1.0  # after the fault's end, before a refused delivery counts
FIRST_ANSWER_S = 30.0  # after a failover, the first answer comes within this
WATCH_ANSWERS_S = 0.05  # how often the harness looks for new answers


def usual_report(
    scenario: str,
    router: Router,
    slack: FakeSlack,
    llm: FakeLLM,
    runs: list[Run],
    fault_end: float | None,
) -> Report:
    """Every scenario's checks (without the harness's notes and the replicas' logs)."""
    queued = {
        sent.question: at for sent in router.sent if (at := router.queued_at(sent)) is not None
    }
    report = check(
        scenario,
        router.sent,
        slack.messages.values(),
        llm.requests,
        runs,
        fault_end,
        queued=queued,
        started=first_asked((s.question for s in router.sent), llm.requests, llm.arrived_at),
    )
    if fault_end is not None:
        refused = router.refused_after(fault_end + REFUSAL_GRACE_S)
        report.add(
            "no delivery refused after the fault",
            not refused,
            "; ".join(f"{a.event_id} retry {a.retry}: {a.status or a.reason}" for a in refused[:5])
            + (f" (+{len(refused) - 5} more)" if len(refused) > 5 else ""),
        )
    report.left_behind += sessions_left(slack.sessions)
    report.add(
        "Slack gave up on no event",
        not router.given_up,
        ", ".join(router.given_up[:10]),
    )
    return report


async def watch_answers(slack: FakeSlack, answered_at: dict[Question, float]) -> None:
    """Note when each answer is first seen finished in its thread."""
    while True:
        now = time.monotonic()
        for message in list(slack.messages.values()):
            if message.streaming or message.bot_id is None:
                continue
            for question in answers_in(message.shown):
                answered_at.setdefault(question, now)
        await asyncio.sleep(WATCH_ANSWERS_S)


def first_answer_after(answered_at: dict[Question, float], moment: float) -> float | None:
    """Seconds from ``moment`` to the first answer finished after it."""
    after = [at for at in answered_at.values() if at > moment]
    return min(after) - moment if after else None


def check_failover(
    report: Report,
    failover: FailoverTimes | None,
    router: Router,
    replicas: Sequence[Replica],
    answered_at: dict[Question, float],
    *,
    first_answer_s: float = FIRST_ANSWER_S,
) -> None:
    """No HTTP 500 from any replica, no traceback in any replica's log, the first answer
    within ``first_answer_s`` of the failover; the failover's times as notes; and the
    report's summary line."""
    served_500 = [a for a in router.attempts if a.status == 500]
    report.add(
        "no replica answered a delivery with HTTP 500",
        not served_500,
        f"{len(served_500)} deliveries: "
        + ", ".join(f"{a.event_id} retry {a.retry}" for a in served_500[:5])
        + (f" (+{len(served_500) - 5} more)" if len(served_500) > 5 else ""),
    )
    tracebacks = {r.name: r.tracebacks() for r in replicas}
    found = sum(len(t) for t in tracebacks.values())
    report.add(
        "no traceback in any replica's log",
        not found,
        "; ".join(
            f"{name}: {len(errors)} ({', '.join(sorted(set(errors))[:3])})"
            for name, errors in tracebacks.items()
            if errors
        ),
    )
    first: float | None = None
    if failover is not None:
        first = first_answer_after(answered_at, failover.sent_at)
        shown = "none" if first is None else f"{first:.2f} s"
        report.add(
            f"the first answer after the failover came within {first_answer_s:.0f} s",
            first is not None and first <= first_answer_s,
            shown,
        )
        report.notes += failover.notes()
        report.notes.append(f"first answer after the failover: {shown}")
        written_after = [s for s in router.sent if s.at > failover.sent_at and not s.probe]
        answered = [
            answered_at[s.question] - s.at for s in written_after if s.question in answered_at
        ]
        if answered:
            report.notes.append(
                f"messages written after the failover: {len(written_after)}, the quickest "
                f"answered {min(answered):.2f} s after it was written"
            )
    scenario = [s for s in router.sent if not s.probe]
    counts = [report.answers.get(s.question, 0) for s in scenario]
    report.summary = Summary(
        sent=len(scenario),
        answered_once=counts.count(1),
        duplicated=sum(1 for n in counts if n > 1),
        lost=counts.count(0),
        out_of_order=report.out_of_order,
        refused=router.refused_by_status(),
        http_500=len(served_500),
        tracebacks=found,
        first_answer_s=first,
    )
