"""A small deployment to break: a private Redis, N ``slack-agent run`` replicas, the fake
Slack and the fake LLM (in this process, on loopback), and a router delivering events the
way Slack does. Faults are injected from outside and the result is checked from outside.

The private Redis is one server by default (``topology="single"``); ``"sentinel"`` gives
a primary, a replica and three Sentinels, ``"cluster"`` a Redis Cluster of three primaries
with a replica each (tests/faults/topology.py). Their failovers are faults here too:
:meth:`Cluster.sentinel_failover`, :meth:`Cluster.kill_primary`,
:meth:`Cluster.cluster_failover`, timed in :attr:`Cluster.failover`;
:meth:`Cluster.add_failover_checks` adds what a failover scenario checks besides the usual
(no HTTP 500, no traceback in any replica's log, the first answer after the failover).

A scenario is written like this::

    async with Cluster(tmp_path, "kill", replicas=2, plan=plan, config=...) as cluster:
        cluster.converse(threads=3, messages=3)   # people write, in the background
        run = await cluster.step_started("t1-m1-s2")
        fault_end = await cluster.kill(cluster.replica_of(run.pid))
        report = await cluster.finish(fault_end)  # settle, probe every thread, check
        report.add("takeover within 15 s", ...)   # the scenario's own expectations
        assert report.ok, report.text()

``finish`` waits for positive signals (every message answered, no work pending in Redis,
Slack quiet for a moment), or decides the system is stuck (no work pending and nothing
happening for a while), or runs out of the cluster's time budget; then it sends one probe
message per thread to look at the history the model gets, and returns the full
:class:`~tests.faults.invariants.Report`. Everything is torn down on exit, and the tails of
the replicas' logs are printed when the body failed; :meth:`Cluster.kill_now` is the
loop-free safety net for a test that timed out.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pydantic
import yaml

from bot.config.schema import AppConfig
from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_harness import app_environment
from tests.fakes.slack_server import Call, FakeSlack
from tests.faults.invariants import (
    Report,
    Run,
    Summary,
    check,
    first_asked,
    left_behind,
    sessions_left,
)
from tests.faults.proxy import CutProxy
from tests.faults.replicas import Replica
from tests.faults.router import RETRY_DELAYS_S, Router, Sent
from tests.faults.script import Answers, Plan, Question, answers_in
from tests.faults.topology import (
    REDIS_AWAY,
    SINGLE,
    Client,
    ClusterTopology,
    FailoverTimes,
    SentinelTopology,
    SingleTopology,
    make_topology,
)

PREFIX = "faults:"
RUNS_KEY = "fault-runs"  # outside the bot's prefix, so no scan of the bot's keys sees it
BASE_CONFIG: dict[str, Any] = {
    "redis": {"key_prefix": PREFIX},
    "llm": {"model": "fake-model", "max_retries": 1},
    "queue": {"claim_idle_s": 10, "lock_ttl_s": 10},
    "slack": {"edit_interval_s": 0.5},
    "tools": {"modules": ["tests.fakes.fault_tools"], "builtins": []},
}
# Keys the coming turn lifecycle adds. A build that does not know one yet runs without it
# (noted in the report) instead of refusing to start, so the scenario still shows how
# today's code behaves.
PROMISED_KEYS = {("queue", "shutdown_grace_s"), ("queue", "deliver_timeout_s")}

START_TIMEOUT_S = 40.0
QUIET_S = 1.0  # no Slack call, model call or delivery for this long: work has settled
STUCK_S = 8.0  # nothing pending in Redis and nothing happening for this long: stuck
PROBE_RESERVE_S = 12.0  # of the time budget, kept for probing the threads' history
REFUSAL_GRACE_S = 1.0  # after the fault's end, before a refused delivery counts
FIRST_ANSWER_S = 30.0  # after a failover, the first answer comes within this
WATCH_ANSWERS_S = 0.05  # how often the harness looks for new answers


def merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, section by section."""
    result = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def supported(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``config`` without the promised keys this build rejects; notes saying which."""
    try:
        AppConfig.model_validate(config)
        return config, []
    except pydantic.ValidationError as exc:
        errors = exc.errors()
    unknown = {tuple(e["loc"]) for e in errors if e["type"] == "extra_forbidden"}
    if len(unknown) != len(errors) or not unknown <= PROMISED_KEYS:
        raise ValueError(f"the scenario's config is invalid: {errors}")
    trimmed = copy.deepcopy(config)
    notes = []
    for section, key in sorted((str(loc[0]), str(loc[1])) for loc in unknown):
        value = trimmed[section].pop(key)
        notes.append(f"this build does not know {section}.{key} (wanted {value}); ran without it")
    return trimmed, notes


class Cluster:
    def __init__(
        self,
        directory: Path,
        scenario: str,
        *,
        replicas: int = 2,
        config: dict[str, Any] | None = None,
        plan: Callable[[Question], Plan] | None = None,
        persistent_redis: bool = False,
        partitionable: bool = False,
        topology: str = SINGLE,
        min_replicas_to_write: int = 0,
        retry_delays_s: Sequence[float] = RETRY_DELAYS_S,
        duplicates: float = 0.0,
        seed: int = 0,
        budget_s: float = 50.0,
    ) -> None:
        self.directory = directory
        self.scenario = scenario
        self.deadline = time.monotonic() + budget_s
        self.topology = make_topology(
            topology, persistent=persistent_redis, min_replicas_to_write=min_replicas_to_write
        )
        if partitionable and topology != SINGLE:
            raise ValueError("a partition cuts a replica off the one Redis: topology 'single'")
        self.config, self.notes = supported(
            merged(merged(BASE_CONFIG, self.topology.app_config()), config or {})
        )
        self.slack = FakeSlack()
        self.llm = FakeLLM()
        self.answers = Answers(plan) if plan is not None else Answers()
        self.llm.otherwise = self.answers
        self.replicas = [Replica(i, directory / f"replica-{i}.log") for i in range(1, replicas + 1)]
        # With ``partitionable``, each replica reaches Redis through its own proxy.
        self.proxies: dict[int, CutProxy] = {}
        self._partitionable = partitionable
        self.router = Router(
            self.slack,
            lambda: [r.port for r in self.replicas if r.up],
            retry_delays_s=retry_delays_s,
            duplicates=duplicates,
            seed=seed,
        )
        self._conversations: list[asyncio.Task[None]] = []
        self._started = False
        self.conversation_started: float | None = None  # time.monotonic() of converse()
        self.failover: FailoverTimes | None = None  # the last failover injected
        self.answered_at: dict[Question, float] = {}  # when each answer was first seen done
        self._answer_watch: asyncio.Task[None] | None = None

    @property
    def redis(self) -> PrivateRedis:
        """The one private Redis (topology "single" only)."""
        if not isinstance(self.topology, SingleTopology):
            raise TypeError(f"the scenario runs on a Redis {self.topology.kind}, not one server")
        return self.topology.server

    # --- life cycle ----------------------------------------------------------------------

    async def __aenter__(self) -> Cluster:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            print(self.logs())
        await self.stop()

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._started = True
        await self.slack.start()
        await self.llm.start()
        await asyncio.to_thread(self.topology.start)
        self._answer_watch = asyncio.create_task(self._watch_answers())
        path = self.directory / "agent.yaml"
        path.write_text(yaml.safe_dump(self.config))
        env = app_environment(
            self.slack.api_url,
            self.llm.base_url,
            self.topology.url,
            path,
            FAULT_RUNS_KEY=RUNS_KEY,
            LOG_LEVEL="INFO",
            **self.topology.recorder_env(),
        )
        for replica in self.replicas:
            # Slack and model calls counted per replica
            own = {"SLACK_BOT_TOKEN": replica.token, "OPENAI_API_KEY": replica.llm_key}
            if self._partitionable:
                proxy = CutProxy("127.0.0.1", self.redis.port)
                await proxy.start()
                self.proxies[replica.index] = proxy
                own["REDIS_URL"] = proxy.url
            await replica.start({**env, **own})
        await asyncio.gather(*(r.healthy(START_TIMEOUT_S) for r in self.replicas))

    async def stop(self) -> None:
        watchers = [*self._conversations, *([self._answer_watch] if self._answer_watch else [])]
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        await self.router.aclose()
        await asyncio.gather(*(r.kill() for r in self.replicas), return_exceptions=True)
        await asyncio.gather(*(p.stop() for p in self.proxies.values()), return_exceptions=True)
        await self.topology.aclose()
        if self._started:
            await self.llm.stop()
            await self.slack.stop()
        self.kill_now()

    def kill_now(self) -> None:
        """Kill every process and remove the Redis directories, without an event loop."""
        for replica in self.replicas:
            replica.kill_now()
        self.topology.close()

    def logs(self) -> str:
        parts = [f"--- {r.name}: last lines of {r.log_path}\n{r.tail()}" for r in self.replicas]
        return "\n".join(parts)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    # --- people writing ----------------------------------------------------------------

    def converse(
        self, threads: int, messages: int, *, gap_s: float = 0.5, first: int = 1
    ) -> list[str]:
        """In the background, in each of ``threads`` threads (t<first>...), write
        ``messages`` messages ``gap_s`` apart; return the threads' names."""
        labels = [f"t{n}" for n in range(first, first + threads)]
        if self.conversation_started is None:
            self.conversation_started = time.monotonic()
        for position, label in enumerate(labels):
            self._conversations.append(
                asyncio.create_task(self._write(label, messages, gap_s, position * 0.05))
            )
        return labels

    async def _write(self, label: str, messages: int, gap_s: float, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        for number in range(messages):
            if number:
                await asyncio.sleep(gap_s)
            self.router.write(label)

    async def into_conversation(self, seconds: float) -> None:
        """Wait until ``seconds`` after the first :meth:`converse` began."""
        began = self.conversation_started or time.monotonic()
        await asyncio.sleep(max(began + seconds - time.monotonic(), 0.0))

    async def conversations_written(self) -> None:
        await asyncio.gather(*self._conversations)

    def write(self, thread: str, *, hold: bool = False) -> Sent:
        return self.router.write(thread, hold=hold)

    def sent(self, question: Question) -> Sent:
        for sent in self.router.sent:
            if sent.question == question:
                return sent
        raise LookupError(f"{question.text} was not written")

    async def starts(self, name: str) -> int:
        """How many times the tool step ``name`` started."""
        with contextlib.suppress(*REDIS_AWAY):
            return sum(1 for r in await self.runs() if r.name == name and r.event == "start")
        return -1

    async def takeover_s(self, question: Question, fault_at: float, dead_pid: int) -> float | None:
        """Seconds from ``fault_at`` (monotonic) to the first sign of another replica working
        on ``question``: a model call for it, or one of its tool steps starting elsewhere.
        A replica cut off from Redis lives on, and a call it made just after the cut is not
        a takeover: calls with its key do not count while it still runs as ``dead_pid``."""
        alive = [r.llm_key for r in self.replicas if r.pid == dead_pid and r.exited_at is None]
        signs = [
            c.at
            for c in self.answers.calls_for(question)
            if c.at > fault_at and c.caller not in alive
        ]
        prefix = question.step_prefix
        offset = time.time() - time.monotonic()
        with contextlib.suppress(*REDIS_AWAY):
            signs += [
                run.at - offset
                for run in await self.runs()
                if run.name.startswith(prefix)
                and run.event == "start"
                and run.pid != dead_pid
                and run.at - offset > fault_at
            ]
        return min(signs) - fault_at if signs else None

    # --- faults --------------------------------------------------------------------------

    def replica_of(self, pid: int) -> Replica:
        for replica in self.replicas:
            if replica.pid == pid:
                return replica
        raise LookupError(f"no replica has pid {pid}")

    async def kill(self, replica: Replica) -> float:
        """SIGKILL; returns when it was sent (monotonic)."""
        at = time.monotonic()
        await replica.kill()
        return at

    def cut(self, replica: Replica) -> float:
        """Partition ``replica`` from Redis (packets silently dropped); returns when."""
        return self.proxies[replica.index].cut()

    def heal(self, replica: Replica) -> float:
        """End the partition (connections that lived through it are reset); returns when."""
        return self.proxies[replica.index].heal()

    def slack_calls(self, replica: Replica, *, after: float, thread_ts: str) -> list[Call]:
        """Slack calls ``replica`` made for the thread ``thread_ts`` since ``after``."""
        return [
            call
            for call in self.slack.calls
            if call.token == replica.token and call.at > after and self._in(call, thread_ts)
        ]

    def _in(self, call: Call, thread_ts: str) -> bool:
        args = call.args
        if thread_ts in (args.get("thread_ts"), args.get("ts")):
            return True
        message = self.slack.messages.get((str(args.get("channel")), str(args.get("ts"))))
        return message is not None and message.thread_ts == thread_ts

    async def restart_redis(self, down_s: float) -> tuple[float, float]:
        """Stop Redis gracefully (it writes its append-only file), start it again on the same
        port and directory ``down_s`` later; return when it stopped and when it was back."""
        await asyncio.to_thread(self.redis.terminate)
        stopped = time.monotonic()
        await asyncio.sleep(down_s)
        await asyncio.to_thread(self.redis.start)
        return stopped, time.monotonic()

    async def sentinel_failover(self) -> float:
        """SENTINEL FAILOVER sent to one Sentinel (topology "sentinel"); returns when it was
        sent. :attr:`failover` records when the Sentinels named the new primary and when
        the old one was demoted (:meth:`failover_over` waits for that)."""
        self.failover = await self._sentinels().failover()
        return self.failover.sent_at

    async def kill_primary(self) -> float:
        """SIGKILL of the primary (topology "sentinel"), not restarted: the Sentinels promote
        the replica. Returns when it was sent; :attr:`failover` records the rest."""
        self.failover = await self._sentinels().kill_primary()
        return self.failover.sent_at

    async def cluster_failover(self, shard: int | None = None) -> float:
        """CLUSTER FAILOVER on the replica of the primary holding the most of the
        conversation's threads, or of the primary serving the bot's ``shard`` (topology
        "cluster"). Returns when it was sent; :attr:`failover` records the rest."""
        if not isinstance(self.topology, ClusterTopology):
            raise TypeError(
                f"a cluster failover needs topology 'cluster', not {self.topology.kind}"
            )
        roots = [s.thread_ts for s in self.router.sent if s.ts == s.thread_ts]
        self.failover = await self.topology.failover(shard=shard, threads=roots)
        if shard is None:
            label = {s.thread_ts: s.question.thread for s in self.router.sent}
            held = ", ".join(label[ts] for ts in self.failover.threads) or "none"
            self.notes.append(f"the primary failed over held keys of the threads {held}")
        return self.failover.sent_at

    async def failover_over(self, within_s: float = 40.0) -> float:
        """Wait until the failover is over (every Sentinel or node names the new primary, and
        the old one was demoted, unless killed); returns when (or now, with a note, if it
        was not over within ``within_s``)."""
        if self.failover is None:
            raise RuntimeError("no failover was injected")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.failover.done.wait(), within_s)
        over = self.failover.done_at
        if over is None:
            self.notes.append(f"the failover was not over {within_s:.0f} s after it began")
            return time.monotonic()
        return over

    def _sentinels(self) -> SentinelTopology:
        if not isinstance(self.topology, SentinelTopology):
            raise TypeError(f"a Sentinel fault needs topology 'sentinel', not {self.topology.kind}")
        return self.topology

    def client(self) -> Client:
        """A client of the private Redis (for scenarios that tamper with keys): on Sentinel,
        of the primary they named when last asked; on a cluster, a cluster client."""
        return self.topology.client()

    async def runs(self) -> list[Run]:
        """Every tool step's start and finish so far (from the primary serving RUNS_KEY now)."""
        client = await self.topology.primary_for(RUNS_KEY)
        raw = await client.lrange(RUNS_KEY, 0, -1)
        return [Run.from_json(item) for item in raw]

    async def step_started(self, name: str, within_s: float = 20.0) -> Run:
        """Wait for the tool step ``name`` to start; return its start."""
        deadline = time.monotonic() + within_s
        while True:
            with contextlib.suppress(*REDIS_AWAY):
                for run in await self.runs():
                    if run.name == name and run.event == "start":
                        return run
            if time.monotonic() > deadline:
                raise AssertionError(f"tool step {name} did not start within {within_s} s")
            await asyncio.sleep(0.05)

    # --- the end -------------------------------------------------------------------------

    async def finish(self, fault_end: float | None) -> Report:
        """Once the fault is over, wait for the system to settle, probe every thread, and
        check everything."""
        if fault_end is not None:
            await asyncio.sleep(max(fault_end - time.monotonic(), 0.0))
        await self.conversations_written()
        started = time.monotonic()
        outcome = await self._settle(
            self.router.sent, clean=True, until=self.deadline - PROBE_RESERVE_S
        )
        self.notes.append(f"after the fault: {outcome} {time.monotonic() - started:.1f} s later")
        probes = [self.router.write(thread, probe=True) for thread in self.router.threads()]
        started = time.monotonic()
        outcome = await self._settle(probes, clean=False, until=self.deadline - 1.0)
        self.notes.append(f"probes: {outcome} {time.monotonic() - started:.1f} s later")
        return await self.report(fault_end)

    async def settled(self, within_s: float) -> str:
        """Wait until every message so far is answered, nothing is left behind or pending,
        and all is quiet (see :meth:`_settle`); returns how it ended."""
        return await self._settle(self.router.sent, clean=True, until=time.monotonic() + within_s)

    async def report(self, fault_end: float | None) -> Report:
        runs: list[Run] = []
        with contextlib.suppress(*REDIS_AWAY):
            runs = await self.runs()
        queued = {
            sent.question: at
            for sent in self.router.sent
            if (at := self.router.queued_at(sent)) is not None
        }
        report = check(
            self.scenario,
            self.router.sent,
            self.slack.messages.values(),
            self.llm.requests,
            runs,
            fault_end,
            queued=queued,
            started=first_asked(
                (s.question for s in self.router.sent), self.llm.requests, self.llm.arrived_at
            ),
        )
        if fault_end is not None:
            refused = self.router.refused_after(fault_end + REFUSAL_GRACE_S)
            report.add(
                "no delivery refused after the fault",
                not refused,
                "; ".join(
                    f"{a.event_id} retry {a.retry}: {a.status or a.reason}" for a in refused[:5]
                )
                + (f" (+{len(refused) - 5} more)" if len(refused) > 5 else ""),
            )
        report.left_behind += sessions_left(self.slack.sessions)
        report.add(
            "Slack gave up on no event",
            not self.router.given_up,
            ", ".join(self.router.given_up[:10]),
        )
        report.notes += self.notes
        report.logs = self.logs()
        return report

    async def _settle(self, wanted: Sequence[Sent], *, clean: bool, until: float) -> str:
        """Wait until every message in ``wanted`` is answered (and, with ``clean``, nothing
        is left behind), no work is pending and all is quiet; or until nothing is pending
        and nothing has happened for STUCK_S; or until ``until``."""
        await self.router.delivered(max(until - time.monotonic(), 0.0))
        while True:
            now = time.monotonic()
            quiet = now - self._last_activity()
            busy = await self._busy()
            if not busy and quiet >= QUIET_S and self._answered(wanted, clean):
                return "settled"
            if not busy and quiet >= STUCK_S:
                return "stuck (nothing pending, nothing happening)"
            if now >= until:
                return f"out of time (still in Redis: {', '.join(busy)})" if busy else "out of time"
            await asyncio.sleep(0.1)

    def _answered(self, wanted: Sequence[Sent], clean: bool) -> bool:
        shown = [m for m in self.slack.messages.values() if not m.streaming]
        for sent in wanted:
            if not any(
                sent.question.answer in m.shown and (m.thread_ts or m.ts) == sent.thread_ts
                for m in shown
            ):
                return False
        return not (
            clean
            and (left_behind(self.slack.messages.values()) or sessions_left(self.slack.sessions))
        )

    def _last_activity(self) -> float:
        moments = [self.answers.last_call_at()]
        if self.slack.calls:
            moments.append(self.slack.calls[-1].at)
        if self.router.attempts:
            moments.append(max(a.at for a in self.router.attempts))
        return max(moments)

    async def _busy(self) -> list[str]:
        """Work the bot still has in Redis: pending stream entries, or a lock held. Any key
        naming (a stream with consumer groups, a key with "lock" in its name) counts. Every
        primary is looked at (the one the Sentinels name now; each of a cluster's)."""
        busy = []
        try:
            for client in await self.topology.primaries():
                async for key in client.scan_iter(match=f"{PREFIX}*lock*", count=1000):
                    busy.append(key)
                async for key in client.scan_iter(match=f"{PREFIX}*", count=1000, _type="stream"):
                    for group in await client.xinfo_groups(key):
                        if int(group.get("pending", 0)):
                            busy.append(f"{key} ({group['pending']} pending for {group['name']})")
        except REDIS_AWAY as exc:
            busy.append(f"Redis unreachable ({type(exc).__name__})")
        return busy

    # --- what a failover scenario checks besides ------------------------------------------

    async def _watch_answers(self) -> None:
        """Note when each answer is first seen finished in its thread."""
        while True:
            now = time.monotonic()
            for message in list(self.slack.messages.values()):
                if message.streaming or message.bot_id is None:
                    continue
                for question in answers_in(message.shown):
                    self.answered_at.setdefault(question, now)
            await asyncio.sleep(WATCH_ANSWERS_S)

    def first_answer_after(self, moment: float) -> float | None:
        """Seconds from ``moment`` to the first answer finished after it."""
        after = [at for at in self.answered_at.values() if at > moment]
        return min(after) - moment if after else None

    def add_failover_checks(
        self, report: Report, *, first_answer_s: float = FIRST_ANSWER_S
    ) -> None:
        """No HTTP 500 from any replica, no traceback in any replica's log, the first answer
        within ``first_answer_s`` of the failover; the failover's times as notes; and the
        report's summary line."""
        failover = self.failover
        served_500 = [a for a in self.router.attempts if a.status == 500]
        report.add(
            "no replica answered a delivery with HTTP 500",
            not served_500,
            f"{len(served_500)} deliveries: "
            + ", ".join(f"{a.event_id} retry {a.retry}" for a in served_500[:5])
            + (f" (+{len(served_500) - 5} more)" if len(served_500) > 5 else ""),
        )
        tracebacks = {r.name: r.tracebacks() for r in self.replicas}
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
            first = self.first_answer_after(failover.sent_at)
            shown = "none" if first is None else f"{first:.2f} s"
            report.add(
                f"the first answer after the failover came within {first_answer_s:.0f} s",
                first is not None and first <= first_answer_s,
                shown,
            )
            report.notes += failover.notes()
            report.notes.append(f"first answer after the failover: {shown}")
            written_after = [s for s in self.router.sent if s.at > failover.sent_at and not s.probe]
            answered = [
                self.answered_at[s.question] - s.at
                for s in written_after
                if s.question in self.answered_at
            ]
            if answered:
                report.notes.append(
                    f"messages written after the failover: {len(written_after)}, the quickest "
                    f"answered {min(answered):.2f} s after it was written"
                )
        scenario = [s for s in self.router.sent if not s.probe]
        counts = [report.answers.get(s.question, 0) for s in scenario]
        report.summary = Summary(
            sent=len(scenario),
            answered_once=counts.count(1),
            duplicated=sum(1 for n in counts if n > 1),
            lost=counts.count(0),
            out_of_order=report.out_of_order,
            refused=self.router.refused_by_status(),
            http_500=len(served_500),
            tracebacks=found,
            first_answer_s=first,
        )
