"""What a fault scenario does with its :class:`~tests.faults.deployment.Deployment`
(a private Redis, N ``slack-agent run`` replicas, the fake Slack and LLM, and a router
delivering events the way Slack does): people write, faults are injected from outside, and
the result is checked from outside.

The private Redis is one server by default (``topology="single"``); ``"sentinel"`` gives
a primary, a replica and three Sentinels, ``"cluster"`` a Redis Cluster of three primaries
with a replica each (tests/faults/topology/). Their failovers are faults here too:
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

A person may also mention the bot in a thread of their own, type ``/agent`` commands and
press buttons, each sent to the replica the scenario names (:meth:`Cluster.mention`,
:meth:`Cluster.command`, :meth:`Cluster.click`).

``finish`` waits for positive signals (every message answered, no work pending in Redis,
Slack quiet for a moment), or decides the system is stuck (no work pending and nothing
happening for a while), or runs out of the cluster's time budget
(tests/faults/settling.py); then it sends one probe message per thread to look at the
history the model gets, and returns the full :class:`~tests.faults.invariants.Report`
(tests/faults/reporting.py). Everything is torn down on exit, and the tails of the
replicas' logs are printed when the body failed; :meth:`Cluster.kill_now` is the loop-free
safety net for a test that timed out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.state.audit import AuditEntry, AuditLog
from bot.state.redis.keys import Keys
from bot.state.redis.shards import Shards
from tests.fakes.slack_harness import (
    button_click,
    command_fields,
    event_envelope,
    mention,
    signed_headers,
)
from tests.fakes.slack_server import BOT_USER, Call, Message
from tests.faults.app_config import RUNS_KEY
from tests.faults.deployment import Deployment
from tests.faults.invariants import Report, Run
from tests.faults.replicas import Replica
from tests.faults.reporting import (
    FIRST_ANSWER_S,
    check_failover,
    first_answer_after,
    usual_report,
)
from tests.faults.router import Sent
from tests.faults.script import Question
from tests.faults.settling import settle
from tests.faults.topology.base import REDIS_AWAY, Client
from tests.faults.topology.redis_cluster import ClusterTopology
from tests.faults.topology.sentinel import SentinelTopology
from tests.waiting import until

PROBE_RESERVE_S = 12.0  # of the time budget, kept for probing the threads' history


class Cluster(Deployment):
    """A scenario's handle on its deployment (see the module's docstring)."""

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

    # --- one person mentioning the bot, typing commands, pressing buttons ----------------

    async def mention(self, replica: Replica, user: str, words: str, channel: str) -> str:
        """``user`` mentions the bot in a new thread of ``channel`` (shown in the fake Slack),
        delivered to ``replica``; the message's ts."""
        ts = self.slack.new_ts()
        self.slack.add_user_message(channel, ts, user, f"<@{BOT_USER}> {words}")
        envelope = event_envelope(mention(words, ts, channel, user), f"Ev{ts}")
        body = json.dumps(envelope)
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"http://127.0.0.1:{replica.port}/slack/events",
                data=body,
                headers=signed_headers(body),
            ) as response,
        ):
            if response.status != 200:
                raise AssertionError(f"the mention got HTTP {response.status}")
        return ts

    async def command(
        self, replica: Replica, user: str, words: str, within_s: float = 20.0
    ) -> dict[str, Any]:
        """``/agent <words>`` by ``user``, sent to ``replica`` as Slack does; the bot's reply
        (in the acknowledgement, or through the response URL when it took longer)."""
        fields = {**command_fields(words, user), "response_url": self.slack.response_url}
        late = len(self.slack.calls_to("response_url"))
        status, said = await self._post_form(replica, fields)
        if status != 200:
            raise AssertionError(f"/agent {words} got HTTP {status}: {said}")
        if not said:
            await until(lambda: len(self.slack.calls_to("response_url")) > late, within_s)
            return dict(self.slack.calls_to("response_url")[late].args)
        return dict(json.loads(said))

    async def click(
        self, replica: Replica, user: str, message: Message, action_id: str, value: str
    ) -> int:
        """``user`` presses the button ``action_id`` (its value ``value``) on ``message``,
        sent to ``replica`` as Slack does; the HTTP status."""
        payload = button_click(action_id, value, user, message.ts, self.slack.response_url)
        status, _ = await self._post_form(replica, {"payload": json.dumps(payload)})
        return status

    async def _post_form(self, replica: Replica, fields: dict[str, str]) -> tuple[int, str]:
        body = urlencode(fields)
        headers = signed_headers(body, "application/x-www-form-urlencoded")
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"http://127.0.0.1:{replica.port}/slack/events", data=body, headers=headers
            ) as response,
        ):
            return response.status, await response.text()

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

    async def audit(self, count: int = 500) -> list[AuditEntry]:
        """The latest ``count`` entries of the bot's audit log, newest first, every shard
        merged (as ``/agent audit`` reads it)."""
        section = self.config["redis"]
        keys = Keys(section["key_prefix"], Shards(int(section.get("shards", 1))))
        return await AuditLog(self.client(), keys).latest(count)

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
        report = usual_report(self.scenario, self.router, self.slack, self.llm, runs, fault_end)
        report.notes += self.notes
        report.logs = self.logs()
        return report

    async def _settle(self, wanted: Sequence[Sent], *, clean: bool, until: float) -> str:
        """Wait until every message in ``wanted`` is answered (and, with ``clean``, nothing
        is left behind), no work is pending and all is quiet; or until nothing is pending
        and nothing has happened for STUCK_S; or until ``until``."""
        return await settle(
            wanted,
            clean=clean,
            until=until,
            router=self.router,
            slack=self.slack,
            answers=self.answers,
            topology=self.topology,
        )

    # --- what a failover scenario checks besides ------------------------------------------

    def first_answer_after(self, moment: float) -> float | None:
        """Seconds from ``moment`` to the first answer finished after it."""
        return first_answer_after(self.answered_at, moment)

    def add_failover_checks(
        self, report: Report, *, first_answer_s: float = FIRST_ANSWER_S
    ) -> None:
        """No HTTP 500 from any replica, no traceback in any replica's log, the first answer
        within ``first_answer_s`` of the failover; the failover's times as notes; and the
        report's summary line."""
        check_failover(
            report,
            self.failover,
            self.router,
            self.replicas,
            self.answered_at,
            first_answer_s=first_answer_s,
        )
