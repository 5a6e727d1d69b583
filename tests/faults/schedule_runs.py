"""What the fakes saw of schedules' runs (issue 34), and the checks that each run the scenario
expects happened exactly once, on time, and no other did.

A run shows up three ways: its headline (a top-level post tagged with message metadata
``{kind: schedule, schedule: <id>, occurrence: <epoch>}``), the answer in that headline's
thread, and the model request that asked the schedule's prompt. Every schedule's prompt
carries a tag of its own (``ask-<word>``) that the scripted model answers with
``answer to <tag>``, so a request and an answer tell which schedule they belong to; a
request belongs to the latest run due when it arrived.

A replica SIGKILLed while it ran turns (:class:`Kill`) leaves model requests of its own that
were cut short; the replica taking such a turn over asks the model again, so a run the kill
cut may show one request of the killed replica and one more, and still one headline and one
answer.

Times: Slack calls and model requests are stamped with ``time.monotonic()``, occurrences are
epoch seconds; ``offset`` (``time.time() - time.monotonic()``) converts one to the other.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.fakes.llm_server import FakeLLM, Request
from tests.fakes.slack_server import Call, FakeSlack, Message
from tests.faults.invariants import Report
from tests.faults.script import content_of

TAG = re.compile(r"\bask-[a-z]+\b")
ON_TIME_S = 5.0  # issue 34: a run fires within 5 s of its time while a replica runs

RunKey = tuple[str, float]  # (schedule id, occurrence)


def answer_to(tag: str) -> str:
    """What the scripted model answers a schedule's prompt with."""
    return f"answer to {tag}"


@dataclass(frozen=True)
class Made:
    """A schedule the scenario made: its id, the tag in its prompt, and the occurrences that
    must have run (each once) by the end, and no other."""

    id: str
    tag: str
    runs: tuple[float, ...]


@dataclass(frozen=True)
class Kill:
    """A replica SIGKILLed while it ran turns: its name, when (``time.monotonic()``), and the
    model requests it had made by then (indexes into the model's requests)."""

    replica: str
    at: float
    requests: frozenset[int]


NO_KILL = Kill("", 0.0, frozenset())


@dataclass
class Seen:
    """One expected run as the fakes saw it."""

    made: Made
    occurrence: float
    posts: list[Call] = field(default_factory=list)  # headline posts tagged with the run
    headlines: list[Message] = field(default_factory=list)  # those still shown
    answers: list[Message] = field(default_factory=list)  # in the headline's thread
    requests: list[int] = field(default_factory=list)  # indexes into the model's requests

    def late_s(self, offset: float) -> float | None:
        """Seconds from the occurrence to the first headline post."""
        if not self.posts:
            return None
        return min(call.at for call in self.posts) + offset - self.occurrence

    def once(self, kill: Kill = NO_KILL) -> bool:
        """One headline posted and shown, one answer, one model request (or, for a turn the
        kill cut short, the killed replica's request and one more after the takeover)."""
        return (
            len(self.posts) == 1
            and len(self.headlines) == 1
            and len(self.answers) == 1
            and (len(self.requests) == 1 or self.taken_over(kill))
        )

    def taken_over(self, kill: Kill) -> bool:
        """Two model requests: one the killed replica made, one after it by another."""
        cut = [index for index in self.requests if index in kill.requests]
        return len(self.requests) == 2 and len(cut) == 1 and cut[0] == min(self.requests)

    def counts(self, kill: Kill = NO_KILL) -> str:
        cut = sum(index in kill.requests for index in self.requests)
        return (
            f"{len(self.posts)} headline post(s), {len(self.headlines)} shown, "
            f"{len(self.answers)} answer(s), {len(self.requests)} model request(s)"
            + (f" ({cut} by the killed replica)" if cut else "")
        )


def run_of(metadata: Any) -> RunKey | None:
    """The run a message's (or a post's) metadata names, if it is a schedule's headline."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return None
    if not isinstance(metadata, dict):
        return None
    payload = metadata.get("event_payload")
    if not isinstance(payload, dict) or payload.get("kind") != "schedule":
        return None
    try:
        return str(payload["schedule"]), float(payload["occurrence"])
    except (KeyError, TypeError, ValueError):
        return None


def headline_posts(slack: FakeSlack) -> list[tuple[RunKey, Call]]:
    """Every top-level post tagged as a schedule's run, in order."""
    found = []
    for call in slack.calls_to("chat.postMessage"):
        key = run_of(call.args.get("metadata"))
        if key is not None and not call.args.get("thread_ts"):
            found.append((key, call))
    return found


def headlines(slack: FakeSlack) -> list[tuple[RunKey, Message]]:
    """Every top-level message shown that is tagged as a schedule's run."""
    found = []
    for message in list(slack.messages.values()):
        key = run_of(message.metadata)
        if key is not None and message.thread_ts is None:
            found.append((key, message))
    return found


def answers_under(slack: FakeSlack, headline: Message, tag: str) -> list[Message]:
    """The finished answers to ``tag`` in the headline's thread."""
    return [
        m
        for m in slack.thread(headline.channel, headline.ts)
        if m.ts != headline.ts and not m.streaming and answer_to(tag) in m.shown
    ]


def asked(request: Request) -> str | None:
    """The schedule tag the request's last user message asks, if any."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            found = TAG.findall(content_of(message))
            return found[-1] if found else None
    return None


def offered(request: Request) -> set[str]:
    """The names of the tools a model request offers."""
    return {str(t["function"]["name"]) for t in request.get("tools") or ()}


def collect(made: Sequence[Made], slack: FakeSlack, llm: FakeLLM, offset: float) -> list[Seen]:
    """Each expected run of each schedule, with what the fakes saw of it."""
    seen = {(m.id, occurrence): Seen(m, occurrence) for m in made for occurrence in m.runs}
    for key, call in headline_posts(slack):
        if (run := _near(seen, key)) is not None:
            run.posts.append(call)
    for key, message in headlines(slack):
        if (run := _near(seen, key)) is not None:
            run.headlines.append(message)
            run.answers += answers_under(slack, message, run.made.tag)
    for schedule in made:
        runs = sorted(schedule.runs)
        for index, request in enumerate(llm.requests):
            if asked(request) != schedule.tag:
                continue
            position = bisect.bisect_right(runs, llm.arrived_at[index] + offset) - 1
            if position >= 0:
                seen[(schedule.id, runs[position])].requests.append(index)
    return sorted(seen.values(), key=lambda s: (s.occurrence, s.made.id))


def strays(made: Sequence[Made], slack: FakeSlack, llm: FakeLLM, offset: float) -> list[str]:
    """Runs nobody expected: headlines of other occurrences (or schedules), and requests
    for a schedule's prompt before its first expected run."""
    expected = {(m.id, o) for m in made for o in m.runs}
    found = [
        f"{key[0]} at {clock(key[1])} ({call.token})"
        for key, call in headline_posts(slack)
        if not any(key[0] == e[0] and abs(key[1] - e[1]) < 0.5 for e in expected)
    ]
    for schedule in made:
        first = min(schedule.runs, default=float("inf"))
        for index, request in enumerate(llm.requests):
            arrived = llm.arrived_at[index] + offset
            if asked(request) == schedule.tag and arrived < first:
                found.append(f"a request for {schedule.tag} at {clock(arrived)}, before its run")
    return found


def check_runs(
    report: Report,
    made: Sequence[Made],
    slack: FakeSlack,
    llm: FakeLLM,
    offset: float,
    kill: Kill = NO_KILL,
) -> list[Seen]:
    """Add the checks: every expected run exactly once and on time, no other run; and a note
    per run with its lateness and the replica that fired it. ``kill``: the model requests a
    replica killed mid-run made, which the runs it cut short may show besides their own."""
    seen = collect(made, slack, llm, offset)
    for schedule in made:
        runs = [s for s in seen if s.made is schedule]
        report.add(
            f"{schedule.id} ({schedule.tag}) ran exactly once at each of its "
            f"{len(schedule.runs)} time(s)",
            all(s.once(kill) for s in runs),
            "; ".join(f"{clock(s.occurrence)}: {s.counts(kill)}" for s in runs if not s.once(kill)),
        )
    late = [(s, s.late_s(offset)) for s in seen]
    report.add(
        f"every run's headline was posted within {ON_TIME_S:.0f} s of its time",
        all(seconds is not None and seconds <= ON_TIME_S for _, seconds in late),
        "; ".join(
            f"{s.made.tag} {clock(s.occurrence)}: {_seconds(seconds)}"
            for s, seconds in late
            if seconds is None or seconds > ON_TIME_S
        ),
    )
    unexpected = strays(made, slack, llm, offset)
    report.add("no run at any other time", not unexpected, "; ".join(unexpected[:10]))
    report.notes += [run_line(s, offset) for s in seen]
    return seen


def run_line(run: Seen, offset: float) -> str:
    """One run's lateness: of its headline, and of its answer, and who posted it."""
    answered = [m.updated_at + offset - run.occurrence for m in run.answers]
    by = ", ".join(sorted({call.token for call in run.posts})) or "nobody"
    asked_times = "" if len(run.requests) == 1 else f", the model asked {len(run.requests)} times"
    return (
        f"{run.made.id} {run.made.tag} at {clock(run.occurrence)}: headline "
        f"{_seconds(run.late_s(offset))} late ({by}), answer "
        f"{_seconds(min(answered, default=None))} after its time{asked_times}"
    )


def requests_of(run: Seen, llm: FakeLLM) -> list[Request]:
    return [llm.requests[index] for index in run.requests]


def clock(epoch: float) -> str:
    """An epoch as a UTC wall-clock time, to the millisecond."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%H:%M:%S.%f")[:-3]


def _near(seen: dict[RunKey, Seen], key: RunKey) -> Seen | None:
    """The expected run ``key`` names (its occurrence as metadata carried it)."""
    for (schedule, occurrence), run in seen.items():
        if schedule == key[0] and abs(occurrence - key[1]) < 0.5:
            return run
    return None


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:+.2f} s"
