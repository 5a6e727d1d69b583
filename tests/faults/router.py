"""Slack's side of event delivery, emulated: what a person writes, and how Slack delivers it.

For every message the router registers what the person wrote in the fake Slack (so the
thread shows it), then posts the signed event envelope to a random replica that is up (as a
load balancer would). A non-200, a refused connection or no answer within 3 s is retried
like Slack does, with ``X-Slack-Retry-Num`` 1..3 and ``X-Slack-Retry-Reason``, after
compressed delays, possibly to another replica; after the last retry Slack gives up. It can
also deliver an event twice (same event id), send the ``message`` event that comes with
every ``app_mention``, and hold a message's first delivery back (refused, as if Slack had
got a 503) until :meth:`Router.release` delivers it again, late.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.fakes.slack_harness import channel_message, event_envelope, mention, signed_headers
from tests.fakes.slack_server import BOT_USER, FakeSlack
from tests.faults.script import Question

CHANNEL = "C0FAULTS"
PERSON = "U0ALICE"
ACK_TIMEOUT_S = 3.0  # Slack's limit for an acknowledgement
RETRY_DELAYS_S = (0.5, 1.0, 2.0)  # Slack's 0 s / 1 min / 5 min, compressed


@dataclass
class Sent:
    """One message a person wrote."""

    question: Question
    channel: str
    ts: str
    thread_ts: str  # the thread's root (its own ts for the first message)
    at: float  # time.monotonic() when it was written
    probe: bool = False  # sent after the fault, to look at the thread's history
    held: bool = False  # its first delivery was refused; release() delivers it


@dataclass(frozen=True)
class Attempt:
    """One delivery of one event to one replica."""

    event_id: str
    retry: int  # X-Slack-Retry-Num; 0 for the first delivery
    at: float  # time.monotonic() when it was sent
    port: int | None  # None: no replica was up, or the delivery was held back
    status: int | None  # None: refused connection or no answer within ACK_TIMEOUT_S
    reason: str  # why it failed: "", "http_error", "http_timeout", "connection_failed", "held"
    answered: float = 0.0  # time.monotonic() when the replica's answer came back

    @property
    def accepted(self) -> bool:
        return self.status == 200


@dataclass
class _Thread:
    label: str
    root_ts: str = ""
    count: int = 0


@dataclass
class Router:
    slack: FakeSlack
    ports: Callable[[], Sequence[int]]  # the replicas a load balancer would send to now
    retry_delays_s: Sequence[float] = RETRY_DELAYS_S
    duplicates: float = 0.0  # share of events delivered a second time
    pairs: bool = True  # send the `message` event that comes with every app_mention
    seed: int = 0
    sent: list[Sent] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)  # event ids Slack stopped retrying
    _threads: dict[str, _Thread] = field(default_factory=dict)
    _deliveries: list[asyncio.Task[None]] = field(default_factory=list)
    _held: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # ts -> envelopes
    _session: aiohttp.ClientSession | None = None

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    async def aclose(self) -> None:
        for task in self._deliveries:
            task.cancel()
        await asyncio.gather(*self._deliveries, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    # --- what people write ---------------------------------------------------------------

    def write(self, thread: str, *, hold: bool = False, probe: bool = False) -> Sent:
        """The next message of ``thread`` ("t1", ...), written now and delivered in the
        background (its first delivery refused if ``hold``)."""
        state = self._threads.setdefault(thread, _Thread(thread))
        state.count += 1
        question = Question(thread, state.count)
        ts = self.slack.new_ts()
        state.root_ts = state.root_ts or ts
        reply_to = state.root_ts if ts != state.root_ts else None
        text = f"<@{BOT_USER}> {question.text}"
        self.slack.add_user_message(CHANNEL, ts, PERSON, text, thread_ts=reply_to)
        sent = Sent(question, CHANNEL, ts, state.root_ts, time.monotonic(), probe, hold)
        self.sent.append(sent)
        event_id = _event_id(question)
        envelopes = [
            event_envelope(mention(question.text, ts, CHANNEL, PERSON, reply_to), event_id)
        ]
        if self.pairs:
            plain = channel_message(text, ts, CHANNEL, PERSON, reply_to)
            envelopes.append(event_envelope(plain, event_id + "msg"))
        for envelope in envelopes:
            if hold:
                self._refuse_held(envelope)
            else:
                self._deliver_later(envelope, retry=0)
        if hold:
            self._held[ts] = envelopes
        return sent

    def release(self, sent: Sent) -> None:
        """Slack's retry of a held message's events arrives now."""
        for envelope in self._held.pop(sent.ts):
            self._deliver_later(envelope, retry=1, reason="http_error")

    def threads(self) -> list[str]:
        return list(self._threads)

    def last_k(self, thread: str) -> int:
        return self._threads[thread].count

    # --- delivery ------------------------------------------------------------------------

    async def delivered(self, within_s: float) -> bool:
        """Wait until every delivery so far has been accepted or given up (False: not
        within ``within_s``)."""
        pending = [task for task in self._deliveries if not task.done()]
        if not pending:
            return True
        done, _ = await asyncio.wait(pending, timeout=within_s)
        return len(done) == len(pending)

    def accepted(self, sent: Sent) -> bool:
        """Some replica acknowledged the message's app_mention event."""
        event_id = _event_id(sent.question)
        return any(a.accepted for a in self.attempts if a.event_id == event_id)

    def queued_at(self, sent: Sent) -> float | None:
        """When the message was certainly queued: the first acknowledgement of its
        app_mention event came back (the plain message event of a mention queues nothing)."""
        event_id = _event_id(sent.question)
        times = [a.answered for a in self.attempts if a.accepted and a.event_id == event_id]
        return min(times, default=None)

    def refused_after(self, moment: float) -> list[Attempt]:
        """Deliveries a replica refused (or never answered) after ``moment``."""
        return [a for a in self.attempts if a.at > moment and not a.accepted and a.reason != "held"]

    def refused_by_status(self) -> dict[str, int]:
        """Deliveries not answered 200 (held ones aside), counted by status, or by why
        there was none (``http_timeout``, ``connection_failed``)."""
        counts: dict[str, int] = {}
        for attempt in self.attempts:
            if attempt.accepted or attempt.reason == "held":
                continue
            key = str(attempt.status) if attempt.status is not None else attempt.reason
            counts[key] = counts.get(key, 0) + 1
        return counts

    def _refuse_held(self, envelope: dict[str, Any]) -> None:
        self.attempts.append(Attempt(envelope["event_id"], 0, time.monotonic(), None, 503, "held"))

    def _deliver_later(self, envelope: dict[str, Any], retry: int, reason: str = "") -> None:
        self._deliveries.append(asyncio.create_task(self._deliver(envelope, retry, reason)))
        if retry == 0 and self._random.random() < self.duplicates:
            # Slack sometimes delivers an event again although it was acknowledged.
            self._deliveries.append(
                asyncio.create_task(self._duplicate(envelope, self._random.uniform(0, 0.5)))
            )

    async def _duplicate(self, envelope: dict[str, Any], after_s: float) -> None:
        await asyncio.sleep(after_s)
        await self._post(envelope, 1, "http_timeout")

    async def _deliver(self, envelope: dict[str, Any], retry: int, reason: str) -> None:
        while True:
            attempt = await self._post(envelope, retry, reason)
            if attempt.accepted:
                return
            if retry >= len(self.retry_delays_s):
                self.given_up.append(envelope["event_id"])
                return
            await asyncio.sleep(self.retry_delays_s[retry])
            retry, reason = retry + 1, attempt.reason

    async def _post(self, envelope: dict[str, Any], retry: int, reason: str) -> Attempt:
        ports = list(self.ports())
        at = time.monotonic()
        if not ports:
            return self._note(envelope, retry, at, None, None, "connection_failed")
        port = self._random.choice(ports)
        body = json.dumps(envelope)
        headers = signed_headers(body)
        if retry:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = reason or "http_error"
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=ACK_TIMEOUT_S),
                connector=aiohttp.TCPConnector(limit=0),
            )
        try:
            async with self._session.post(
                f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers
            ) as response:
                await response.read()
                status = response.status
        except TimeoutError:
            return self._note(envelope, retry, at, port, None, "http_timeout")
        except (aiohttp.ClientError, OSError):
            return self._note(envelope, retry, at, port, None, "connection_failed")
        return self._note(envelope, retry, at, port, status, "" if status == 200 else "http_error")

    def _note(
        self,
        envelope: dict[str, Any],
        retry: int,
        at: float,
        port: int | None,
        status: int | None,
        reason: str,
    ) -> Attempt:
        attempt = Attempt(envelope["event_id"], retry, at, port, status, reason, time.monotonic())
        self.attempts.append(attempt)
        return attempt


def _event_id(question: Question) -> str:
    return f"Ev{question.thread}m{question.k}"
