"""What must hold after a fault, checked from outside: pure functions over what the fake
Slack shows, what the fake LLM was asked, and the tool runs recorded in Redis.

- answered once: every message has exactly one finished bot message showing its answer;
- order: in each thread, a message is answered before every later message that started
  after it was queued (the turns of a thread run in message order among those pending at
  the same time; a message Slack redelivers after a later one already started may follow
  it). Without the times, the plain order of the people's messages is required;
- nothing left behind: no open stream, no Stop button, no task card still running, no
  "running…" or "Working on it…", no agent session still "processing";
- history usable: the model request for a probe (one more message per thread, sent after
  the fault) holds every earlier message of the thread once, every tool call with a real
  result, and no answer the thread does not show, each shown answer once;
- tools: a finished step never ran again, no step started more than twice.

Everything is counted into a :class:`Report`, which explains itself in :meth:`Report.text`.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.slack_server import Message
from tests.faults.router import Sent
from tests.faults.script import Question, answers_in, content_of, questions_in

STOP_ACTION = "stop_turn"
LEFTOVER_TEXTS = ("running…", "Working on it…")
METADATA_TYPE = "slack_agent"


@dataclass(frozen=True)
class Check:
    """A scenario's own expectation (exit time, takeover time, ...)."""

    name: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class Run:
    """One start or finish of a tool step (tests.fakes.fault_tools)."""

    name: str
    event: str  # "start" or "finish"
    pid: int
    at: float  # time.time()

    @classmethod
    def from_json(cls, raw: str | bytes) -> Run:
        data = json.loads(raw)
        return cls(str(data["name"]), str(data["event"]), int(data["pid"]), float(data["at"]))


@dataclass(frozen=True)
class Summary:
    """One line of a failover scenario's report (tests.faults.cluster's
    ``add_failover_checks``): the scenario's messages (no probes) and its deliveries."""

    sent: int
    answered_once: int
    duplicated: int
    lost: int
    out_of_order: int
    refused: dict[str, int]  # deliveries not answered 200, by status (or why: http_timeout...)
    http_500: int
    tracebacks: int  # in the replicas' logs
    first_answer_s: float | None  # from the failover to the first answer finished after it

    def line(self) -> str:
        refused = sum(self.refused.values())
        by_status = ", ".join(f"{status}: {n}" for status, n in sorted(self.refused.items()))
        first = "none" if self.first_answer_s is None else f"{self.first_answer_s:.2f} s"
        return (
            f"sent {self.sent}, answered once {self.answered_once}, duplicated "
            f"{self.duplicated}, lost {self.lost}, out of order {self.out_of_order}, refused "
            f"deliveries {refused}{f' ({by_status})' if by_status else ''}, HTTP 500s "
            f"{self.http_500}, tracebacks {self.tracebacks}, first answer after the failover "
            f"{first}"
        )


@dataclass(repr=False)
class Report:
    scenario: str
    sent: int = 0  # messages of the scenario (probes not included)
    probes: int = 0
    answered_once: int = 0  # of every message, probes included
    duplicated: int = 0  # messages answered more than once
    lost: int = 0  # messages never answered
    out_of_order: int = 0  # answers shown before the answer of an earlier message
    recover_s: float | None = None  # from the fault's end to the last answer; None: lost some
    answers: dict[Question, int] = field(default_factory=dict)  # finished answers per message
    misplaced: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    metadata: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    logs: str = ""  # the tails of the replicas' logs
    summary: Summary | None = None  # a failover scenario's one line

    @property
    def ok(self) -> bool:
        return (
            self.duplicated == 0
            and self.lost == 0
            and self.out_of_order == 0
            and not self.misplaced
            and not self.left_behind
            and not self.history
            and not self.metadata
            and not self.tools
            and all(check.ok for check in self.checks)
        )

    def __repr__(self) -> str:
        return f"Report({self.scenario!r}, ok={self.ok})"

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, ok, detail))

    def text(self) -> str:
        total = self.sent + self.probes
        recover = "never" if self.recover_s is None else f"{self.recover_s:.1f} s"
        lines = [
            f"scenario {self.scenario}: {'OK' if self.ok else 'FAILED'}",
            f"  sent {self.sent} (+{self.probes} probes); answered once {self.answered_once}"
            f"/{total}, duplicated {self.duplicated}, lost {self.lost}, out of order "
            f"{self.out_of_order}; time to recover {recover}",
        ]
        if self.summary is not None:
            lines.append(f"  summary: {self.summary.line()}")
        wrong = {q: n for q, n in sorted(self.answers.items()) if n != 1}
        if wrong:
            lines.append(
                "  answers per message (not 1): "
                + ", ".join(f"{q.text}={n}" for q, n in wrong.items())
            )
        for title, problems in (
            ("misplaced answers", self.misplaced),
            ("order", self.order),
            ("left behind", self.left_behind),
            ("history", self.history),
            ("metadata", self.metadata),
            ("tool runs", self.tools),
        ):
            lines += [f"  {title}: {problem}" for problem in problems]
        for check in self.checks:
            mark = "ok" if check.ok else "FAILED"
            lines.append(
                f"  check {check.name}: {mark}{' - ' + check.detail if check.detail else ''}"
            )
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def explain(self) -> str:
        """The report, then the replicas' last log lines."""
        return self.text() + ("\n" + self.logs if self.logs else "")


# --- the checks ---------------------------------------------------------------------------


def check(
    scenario: str,
    sent: Sequence[Sent],
    bot_messages: Iterable[Message],
    requests: Sequence[dict[str, Any]],
    runs: Sequence[Run] = (),
    fault_end: float | None = None,
    queued: Mapping[Question, float] | None = None,
    started: Mapping[Question, float] | None = None,
) -> Report:
    """Every invariant over the final state; ``fault_end`` (monotonic) times the recovery.
    ``queued`` (when each message was certainly queued) and ``started`` (when the model was
    first asked about it) refine the order check to messages pending at the same time."""
    messages = sorted(bot_messages, key=lambda m: float(m.ts))
    report = Report(
        scenario, sent=sum(not s.probe for s in sent), probes=sum(s.probe for s in sent)
    )
    shown = _shown_answers(messages)
    _count_answers(report, sent, shown)
    _check_order(report, sent, shown, queued, started)
    report.left_behind = left_behind(messages)
    report.metadata = metadata_problems(sent, messages)
    report.history = history_problems(sent, requests, shown)
    report.tools = run_problems(runs)
    report.recover_s = _recovery(sent, shown, fault_end) if report.lost == 0 else None
    return report


@dataclass(frozen=True)
class _Shown:
    """A finished bot message showing the answer to ``question``."""

    question: Question
    message: Message


def _shown_answers(messages: Sequence[Message]) -> list[_Shown]:
    found = []
    for message in messages:
        if message.streaming:
            continue
        for question in dict.fromkeys(answers_in(message.shown)):
            found.append(_Shown(question, message))
    return found


def _count_answers(report: Report, sent: Sequence[Sent], shown: Sequence[_Shown]) -> None:
    where = {s.question: s for s in sent}
    counts: Counter[Question] = Counter()
    for item in shown:
        origin = where.get(item.question)
        if (
            origin is None
            or item.message.channel != origin.channel
            or ((item.message.thread_ts or item.message.ts) != origin.thread_ts)
        ):
            report.misplaced.append(
                f"{item.question.answer!r} shown in {item.message.channel}/"
                f"{item.message.thread_ts or item.message.ts}, not in its own thread"
            )
            continue
        counts[item.question] += 1
    report.answers = {s.question: counts[s.question] for s in sent}
    report.answered_once = sum(1 for n in report.answers.values() if n == 1)
    report.duplicated = sum(1 for n in report.answers.values() if n > 1)
    report.lost = sum(1 for n in report.answers.values() if n == 0)


def _first_answer(shown: Sequence[_Shown]) -> dict[Question, Message]:
    first: dict[Question, Message] = {}
    for item in shown:  # oldest first
        first.setdefault(item.question, item.message)
    return first


def _check_order(
    report: Report,
    sent: Sequence[Sent],
    shown: Sequence[_Shown],
    queued: Mapping[Question, float] | None = None,
    started: Mapping[Question, float] | None = None,
) -> None:
    """Per thread, the answers that came too late: a message answered after a later one
    that started while it was already queued."""
    first = _first_answer(shown)
    by_thread: dict[str, list[Sent]] = defaultdict(list)
    for item in sent:
        by_thread[item.question.thread].append(item)
    for thread, items in sorted(by_thread.items()):
        answered = [s for s in sorted(items, key=lambda s: float(s.ts)) if s.question in first]
        shown_order = sorted(answered, key=lambda s: float(first[s.question].ts))
        wrong = 0
        for position, earlier in enumerate(shown_order):
            overtaken_by = [
                later
                for later in shown_order[:position]
                if float(later.ts) > float(earlier.ts)
                and _was_waiting(earlier.question, later.question, queued, started)
            ]
            if overtaken_by:
                wrong += 1
        if wrong:
            report.out_of_order += wrong
            report.order.append(
                f"{thread}: written {' '.join(f'm{s.question.k}' for s in answered)}, "
                f"answered {' '.join(f'm{s.question.k}' for s in shown_order)}"
            )


def _was_waiting(
    earlier: Question,
    later: Question,
    queued: Mapping[Question, float] | None,
    started: Mapping[Question, float] | None,
) -> bool:
    if queued is None or started is None:
        return True
    queued_at, started_at = queued.get(earlier), started.get(later)
    return queued_at is None or started_at is None or queued_at < started_at


def first_asked(
    questions: Iterable[Question], requests: Sequence[dict[str, Any]], arrived_at: Sequence[float]
) -> dict[Question, float]:
    """When the model was first asked about each question (its first round's request)."""
    times: dict[Question, float] = {}
    for question in questions:
        request = _first_request_for(question, requests)
        if request is not None:
            index = next(i for i, r in enumerate(requests) if r is request)
            if index < len(arrived_at):
                times[question] = arrived_at[index]
    return times


def _recovery(
    sent: Sequence[Sent], shown: Sequence[_Shown], fault_end: float | None
) -> float | None:
    if fault_end is None:
        return None
    first = _first_answer(shown)
    times = [first[s.question].updated_at for s in sent if not s.probe and s.question in first]
    return max(0.0, max(times, default=fault_end) - fault_end)


def left_behind(messages: Iterable[Message]) -> list[str]:
    """Open streams, live Stop buttons, and words of work still going on."""
    problems = []
    for message in messages:
        where = f"{message.ts} in {message.thread_ts or message.ts}"
        if message.streaming:
            problems.append(f"message {where} is still streaming: {_short(message.text)!r}")
        if STOP_ACTION in _action_ids(message.blocks):
            problems.append(f"message {where} still has a Stop button")
        if message.open_tasks and not message.streaming:
            names = ", ".join(str(t.get("title")) for t in message.open_tasks)
            problems.append(f"message {where} still shows running task cards: {names}")
        words = [message.text, *_strings(message.blocks)]
        for leftover in LEFTOVER_TEXTS:
            if any(leftover in text for text in words):
                problems.append(
                    f"message {where} still says {leftover!r}: {_short(message.text)!r}"
                )
    return problems


def sessions_left(sessions: dict[tuple[str, str], list[str]]) -> list[str]:
    """Agent sessions the bot left "processing" (Slack would keep showing it works)."""
    return [
        f"the agent session of {channel}/{thread} is still {statuses[-1]!r}"
        for (channel, thread), statuses in sorted(sessions.items())
        if statuses and statuses[-1] == "processing"
    ]


def metadata_problems(sent: Sequence[Sent], messages: Iterable[Message]) -> list[str]:
    """Where the bot labels a message as an answer (metadata event_type "slack_agent",
    kind "answer"), the label must name the message it answers."""
    ts_of = {s.question: s.ts for s in sent}
    problems = []
    for message in messages:
        metadata = message.metadata or {}
        if metadata.get("event_type") != METADATA_TYPE:
            continue
        payload = metadata.get("event_payload") or {}
        if payload.get("kind") != "answer":
            continue
        for question in answers_in(message.shown):
            if question in ts_of and str(payload.get("message")) != ts_of[question]:
                problems.append(
                    f"answer message {message.ts} shows {question.answer!r} but its metadata "
                    f"names message {payload.get('message')}, not {ts_of[question]}"
                )
    return problems


def history_problems(
    sent: Sequence[Sent], requests: Sequence[dict[str, Any]], shown: Sequence[_Shown]
) -> list[str]:
    """Look at the first model request for each thread's probe."""
    problems = []
    shown_in: dict[str, set[Question]] = defaultdict(set)
    for item in shown:
        shown_in[item.question.thread].add(item.question)
    for probe in (s for s in sent if s.probe):
        thread = probe.question.thread
        request = _first_request_for(probe.question, requests)
        if request is None:
            problems.append(f"{thread}: the probe {probe.question.text!r} never reached the model")
            continue
        earlier = [
            s.question
            for s in sent
            if s.question.thread == thread and s.question.k < probe.question.k
        ]
        problems += [
            f"{thread}: {p}"
            for p in _history_of(request["messages"], probe.question, earlier, shown_in[thread])
        ]
    return problems


def _first_request_for(
    question: Question, requests: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    """The request that asked the model about ``question`` first (its first round)."""
    for request in requests:
        messages = request.get("messages") or []
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users:
            continue
        last = users[-1]
        if questions_in(content_of(messages[last]))[-1:] == [question] and not any(
            m.get("role") == "assistant" for m in messages[last + 1 :]
        ):
            return request
    return None


def _history_of(
    messages: list[dict[str, Any]],
    probe: Question,
    earlier: list[Question],
    shown: set[Question],
) -> list[str]:
    problems = []
    before = messages[: max(i for i, m in enumerate(messages) if m.get("role") == "user")]
    asked: Counter[Question] = Counter()
    answered: Counter[Question] = Counter()
    for message in before:
        if message.get("role") == "user":
            asked.update(questions_in(content_of(message)))
        elif message.get("role") == "assistant":
            answered.update(answers_in(content_of(message)))
    for question in earlier:
        if asked[question] != 1:
            problems.append(f"{question.text!r} appears {asked[question]} times (want 1)")
    for question in sorted(set(asked) - set(earlier)):
        problems.append(f"{question.text!r} does not belong in this history")
    for question, times in sorted(answered.items()):
        if question not in shown:
            problems.append(f"the history has {question.answer!r}, which the thread never showed")
        elif times != 1:
            problems.append(f"the history has {question.answer!r} {times} times")
    for question in sorted(shown - set(answered) - {probe}):
        problems.append(f"the thread shows {question.answer!r} but the history does not")
    problems += _unpaired_calls(before)
    return problems


def _unpaired_calls(messages: list[dict[str, Any]]) -> list[str]:
    """Every assistant tool call needs its result right after it, and a real one."""
    problems = []
    for position, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        results: dict[str, str] = {}
        for following in messages[position + 1 :]:
            if following.get("role") != "tool":
                break
            results.setdefault(str(following.get("tool_call_id")), content_of(following))
        for call in message.get("tool_calls") or ():
            call_id = str(call.get("id"))
            name = (call.get("function") or {}).get("name", "?")
            if call_id not in results:
                problems.append(f"tool call {call_id} ({name}) has no result")
            elif _error_kind(results[call_id]) == "Interrupted":
                problems.append(f"tool call {call_id} ({name}) has only an 'interrupted' stand-in")
    return problems


def run_problems(runs: Sequence[Run]) -> list[str]:
    """A finished step must not start again; no step may start more than twice."""
    problems = []
    by_name: dict[str, list[Run]] = defaultdict(list)
    for run in sorted(runs, key=lambda r: r.at):
        by_name[run.name].append(run)
    for name, events in sorted(by_name.items()):
        starts = [r for r in events if r.event == "start"]
        finishes = [r for r in events if r.event == "finish"]
        if finishes and any(s.at > finishes[0].at for s in starts):
            problems.append(f"{name} finished, then ran again ({len(starts)} starts)")
        elif len(starts) > 2:
            problems.append(f"{name} started {len(starts)} times (at most 2)")
    return problems


def _error_kind(content: str) -> str | None:
    try:
        data = json.loads(content)
    except ValueError:
        return None
    return str(data.get("error")) if isinstance(data, dict) and "error" in data else None


def _action_ids(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        if isinstance(value.get("action_id"), str):
            found.add(value["action_id"])
        for item in value.values():
            found |= _action_ids(item)
    elif isinstance(value, list):
        for item in value:
            found |= _action_ids(item)
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
