"""Generated schedules of crashes, Redis drops and Slack failures, run against the real turn
lifecycle, and the invariants that must hold after every one of them.

Each simulated process is a thread with its own event loop, Redis connection pool, Slack
client and worker (the real ThreadProcessor, TurnOwner, SlackResponder and loop), all on the
real Redis under one key prefix per example, and one in-memory fake Slack shared by all.
A crash marks the process dead, so every later Redis or Slack call it would make fails
(nothing it cleans up on the way out reaches the world), and stops its loop. A crash can
also strike right after a Redis command or a Slack call took effect, before the process
learned the answer, and a Slack call can take effect and then time out while the process
lives on: the cases an idempotency key would cover, which Slack does not have.
A Redis drop loses a command before it is sent, or its reply after it ran. A partition
leaves a process alive but cut off from Redis: its commands and replies are lost for a
while (nothing answers, nothing resets), then every connection that lived through it is
reset.

Invariants, once the faults stop and two healthy processes finish the work: every message
has exactly one answer and nothing else; answers follow the order of the messages in each
thread; no stream is left open and no progress message keeps its Stop button; each thread's
history holds every turn once, delivered, with every tool call paired with its result; no
tool call ran more than twice; a partitioned process made no Slack call once its leases
could no longer cover one, until the partition healed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis.asyncio as redis_asyncio
import redis.exceptions
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.agent.messages import repair
from bot.config.schema import AppConfig, SlackConfig
from bot.llm.response import ModelResponse, ToolCall
from bot.process.state import State, build_state, open_state
from bot.slack.outbound.responder import SlackResponder
from bot.state.redis.connection import connect
from bot.state.redis.thread_key import ThreadKey
from bot.turn.model import Turn
from bot.turn.store.history import UNDELIVERED
from bot.turn.store.lease import ThreadLease, ThreadLocks
from bot.turn.store.queue import QueueLook
from tests.conftest import REDIS_URL
from tests.fakes.function_model import FunctionModel, last_user_text
from tests.fakes.in_memory_slack import InMemorySlack
from tests.fakes.slack_server import FakeSlack
from tests.fakes.worker_kit import make_worker
from tests.waiting import until_true
from tools import tool

LEASE_S = 0.6
CLAIM_IDLE_S = 0.5
ANSWER_S = 0.1  # the model thinks this long before it answers
THREADS = 2
PROCESSES = 2
CONVERGE_S = 45.0
ROOT = "1600000000.000001"  # every thread's root message
SLACK_METHODS = ("chat.postMessage", "chat.update", "chat.startStream", "chat.stopStream")


class Crash(BaseException):
    """The process died: nothing it does from now on reaches Redis or Slack."""


# --- the schedule --------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    thread: int


@dataclass(frozen=True)
class Kill:
    process: int


@dataclass(frozen=True)
class KillAfterRedis:
    process: int
    commands: int  # the process dies right after this many more Redis commands ran


@dataclass(frozen=True)
class KillAfterSlack:
    process: int
    method: str  # the process dies right after its next call of this method took effect


@dataclass(frozen=True)
class DropRedis:
    process: int
    commands: int
    reply_lost: bool  # the command ran and its reply was lost, or it never ran


@dataclass(frozen=True)
class FailSlack:
    calls: int  # the next calls to Slack (any process) fail with 503


@dataclass(frozen=True)
class Unconfirmed:
    method: str  # the next call of this method (any process) is applied, then times out


@dataclass(frozen=True)
class Partition:
    process: int
    ms: int  # how long its Redis traffic is silently dropped


@dataclass(frozen=True)
class Pause:
    ms: int


Step = (
    Send
    | Kill
    | KillAfterRedis
    | KillAfterSlack
    | DropRedis
    | FailSlack
    | Unconfirmed
    | Partition
    | Pause
)

processes = st.integers(0, PROCESSES - 1)
steps = st.one_of(
    st.builds(Send, st.integers(0, THREADS - 1)),
    st.builds(Send, st.integers(0, THREADS - 1)),
    st.builds(Kill, processes),
    st.builds(KillAfterRedis, processes, st.integers(1, 40)),
    st.builds(KillAfterSlack, processes, st.sampled_from(SLACK_METHODS)),
    st.builds(KillAfterSlack, processes, st.sampled_from(SLACK_METHODS)),
    st.builds(DropRedis, processes, st.integers(1, 3), st.booleans()),
    st.builds(FailSlack, st.integers(1, 6)),
    st.builds(Unconfirmed, st.sampled_from(SLACK_METHODS)),
    st.builds(Partition, processes, st.integers(200, 2500)),
    st.builds(Pause, st.integers(0, 400)),
)


# --- faults of one simulated process -----------------------------------------------------


@dataclass
class Faults:
    dead: bool = False
    redis_countdown: int = 0  # > 0: die when it reaches 0
    drops: list[bool] = field(default_factory=list)  # pending drops: reply lost or not
    slack_kill: str = ""  # die right after the next call of this method
    loop: asyncio.AbstractEventLoop | None = None
    cut_until: float = 0.0  # time.monotonic(): Redis traffic is dropped until then
    cuts: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each
    slack_calls: list[tuple[float, str]] = field(default_factory=list)  # (when, method)
    acquired: list[float] = field(default_factory=list)  # when it took a thread's lock

    def cut(self, seconds: float) -> None:
        now = time.monotonic()
        self.cut_until = now + seconds
        self.cuts.append((now, self.cut_until))

    def die(self) -> None:
        self.dead = True
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
        raise Crash

    def check(self) -> None:
        if self.dead:
            raise Crash


def faulty_connection(faults: Faults) -> type[redis_asyncio.Connection]:
    class FaultyConnection(redis_asyncio.Connection):
        async def _through_cut(self, what: str) -> None:
            """During a partition: nothing comes back until it heals, then a reset."""
            if time.monotonic() >= faults.cut_until:
                return
            # The heal comes from another thread (the schedule's): polled, not awaited.
            while time.monotonic() < faults.cut_until:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            faults.check()
            await self.disconnect()
            raise redis.exceptions.ConnectionError(f"{what} lost in a partition (injected)")

        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            faults.check()
            await self._through_cut("command")
            if faults.drops and not faults.drops[0]:
                faults.drops.pop(0)
                await self.disconnect()
                raise redis.exceptions.ConnectionError("dropped before sending (injected)")
            await super().send_packed_command(command, check_health)

        async def read_response(self, *args: Any, **kwargs: Any) -> Any:
            faults.check()
            response = await super().read_response(*args, **kwargs)
            await self._through_cut("reply")
            if faults.redis_countdown > 0:
                faults.redis_countdown -= 1
                if faults.redis_countdown == 0:
                    faults.die()
            if faults.drops and faults.drops[0]:
                faults.drops.pop(0)
                await self.disconnect()
                raise redis.exceptions.ConnectionError("reply lost (injected)")
            return response

    return FaultyConnection


# --- the simulated world -----------------------------------------------------------------


class World:
    def __init__(self, prefix: str, streaming: bool) -> None:
        self.prefix = prefix
        self.slack = FakeSlack()
        self.slack_lock = threading.Lock()
        self.slack_failures = 0
        self.unconfirmed: list[str] = []
        self.streaming = streaming
        self.runs: Counter[str] = Counter()  # tool call id -> runs started
        self.runs_lock = threading.Lock()

    def before_slack(self, faults: Faults, method: str) -> int | None:
        faults.check()
        faults.slack_calls.append((time.monotonic(), method))
        with self.slack_lock:
            if self.slack_failures > 0 and method != "auth.test":
                self.slack_failures -= 1
                return 503
        return None

    def after_slack(self, faults: Faults, method: str) -> None:
        if faults.slack_kill and faults.slack_kill == method:
            faults.slack_kill = ""
            faults.die()
        with self.slack_lock:
            unconfirmed = method in self.unconfirmed
            if unconfirmed:
                self.unconfirmed.remove(method)
        if unconfirmed:
            raise TimeoutError(f"{method} was applied; its answer never came (injected)")

    def model(self) -> FunctionModel:
        async def respond(
            messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
        ) -> ModelResponse:
            label = last_user_text(messages)
            if messages[-1]["role"] == "user":
                arguments = json.dumps({"label": label})
                return ModelResponse("", [ToolCall(f"call-{label}", "note", arguments)])
            await asyncio.sleep(ANSWER_S)  # a window for a partition between the rounds
            return ModelResponse(f"answer to {label}. " + "More words follow here. " * 8)

        return FunctionModel(respond)


class RecordedLocks(ThreadLocks):
    """Thread locks that note when the process took one (a new lease to speak under)."""

    def __init__(self, client: Any, keys: Any, ttl_s: float, faults: Faults) -> None:
        super().__init__(client, keys, ttl_s)
        self.faults = faults

    async def try_acquire(
        self, thread: ThreadKey, consumer: str, *, look: QueueLook | None = None
    ) -> ThreadLease | None:
        lease = await super().try_acquire(thread, consumer, look=look)
        if lease is not None:
            self.faults.acquired.append(time.monotonic())
        return lease


class SimProcess:
    def __init__(self, world: World, number: int, generation: int) -> None:
        self.world = world
        self.name = f"p{number}g{generation}"
        self.faults = Faults()
        self.stop_requested = threading.Event()
        self.stop_event: asyncio.Event | None = None
        self.error: BaseException | None = None  # what broke it, other than a crash
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """A clean stop (SIGTERM): the worker finishes its turns and returns."""
        self.stop_requested.set()
        loop, event = self.faults.loop, self.stop_event
        if loop is not None and event is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)
        self.thread.join(30)

    def kill(self) -> None:
        self.faults.dead = True
        loop = self.faults.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        self.thread.join(30)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except (Crash, RuntimeError) as exc:
            if not self.faults.dead:  # not killed: something went wrong
                self.error = exc
                raise
        except Exception as exc:
            self.error = exc
            raise

    async def _main(self) -> None:
        self.faults.loop = asyncio.get_running_loop()
        world, faults = self.world, self.faults
        config = AppConfig.model_validate({"redis": {"key_prefix": world.prefix}})
        handle = connect(REDIS_URL, 64, connection_class=faulty_connection(faults))
        state = build_state(handle, config)
        state.threads.locks = RecordedLocks(state.client, state.keys, LEASE_S, faults)
        client = InMemorySlack(
            world.slack,
            world.slack_lock,
            before=lambda method: world.before_slack(faults, method),
            after=lambda method: world.after_slack(faults, method),
        )
        slack = SlackConfig(streaming=world.streaming, edit_interval_s=0.2)
        responder = SlackResponder(client, slack)

        @tool
        async def note(label: str) -> str:
            """Take a note."""
            faults.check()
            with world.runs_lock:
                world.runs[label] += 1
            await asyncio.sleep(0.05)
            return "noted"

        worker = make_worker(
            state,
            world.model(),
            responder,
            tools=[note],
            name=self.name,
            claim_idle_s=CLAIM_IDLE_S,
            max_attempts=100,
            shutdown_grace_s=5,
        )
        stop = self.stop_event = asyncio.Event()
        if self.stop_requested.is_set():
            stop.set()
        try:
            await worker.run(stop)
        finally:
            if not faults.dead:
                await state.aclose()


# --- running a schedule ------------------------------------------------------------------


async def play(schedule: list[Step], streaming: bool) -> None:
    prefix = f"test:sched:{uuid.uuid4().hex[:10]}:"
    world = World(prefix, streaming)
    observer = open_state(REDIS_URL, AppConfig.model_validate({"redis": {"key_prefix": prefix}}))
    generation = 0
    fleet: list[SimProcess] = []
    for number in range(PROCESSES):
        fleet.append(SimProcess(world, number, generation))
        fleet[-1].start()
    everyone = list(fleet)  # every process that ever ran
    sent: dict[int, list[str]] = {t: [] for t in range(THREADS)}
    for thread in range(THREADS):
        world.slack.add_user_message(f"C{thread}", ROOT, "U1", "a thread")
    ts = 1_700_000_000
    try:
        for step in schedule:
            if isinstance(step, Send):
                ts += 1
                label = f"m{ts}-t{step.thread}"
                sent[step.thread].append(label)
                with world.slack_lock:
                    world.slack.add_user_message(
                        f"C{step.thread}", f"{ts}.000100", "U1", label, thread_ts=ROOT
                    )
                turn = Turn(
                    "T1",
                    f"C{step.thread}",
                    ROOT,
                    "U1",
                    label,
                    message_ts=f"{ts}.000100",
                    event_id=f"Ev{ts}",
                )
                await observer.threads.queue.enqueue(turn)
            elif isinstance(step, Kill):
                fleet[step.process].kill()
                generation += 1
                fleet[step.process] = SimProcess(world, step.process, generation)
                fleet[step.process].start()
                everyone.append(fleet[step.process])
            elif isinstance(step, KillAfterRedis):
                fleet[step.process].faults.redis_countdown = step.commands
            elif isinstance(step, KillAfterSlack):
                fleet[step.process].faults.slack_kill = step.method
            elif isinstance(step, DropRedis):
                fleet[step.process].faults.drops.extend([step.reply_lost] * step.commands)
            elif isinstance(step, FailSlack):
                with world.slack_lock:
                    world.slack_failures += step.calls
            elif isinstance(step, Partition):
                fleet[step.process].faults.cut(step.ms / 1000)
            elif isinstance(step, Unconfirmed):
                with world.slack_lock:
                    world.unconfirmed.append(step.method)
            else:
                await asyncio.sleep(step.ms / 1000)
        # The faults stop; dead processes are replaced by healthy ones.
        with world.slack_lock:
            world.slack_failures = 0
            world.unconfirmed.clear()
        for number, process in enumerate(fleet):
            process.faults.redis_countdown, process.faults.slack_kill = 0, ""
            process.faults.drops.clear()  # a partition heals at its own time
            if process.faults.dead:
                process.kill()
                generation += 1
                fleet[number] = SimProcess(world, number, generation)
                fleet[number].start()
                everyone.append(fleet[number])

        async def settled() -> bool:
            broken = [p.error for p in fleet if p.error is not None]
            assert not broken, f"a process failed: {broken[0]!r}"
            return (
                await observer.threads.queue.pending_count() == 0
                and not await observer.client.exists(observer.keys.notices(0))
            )

        await until_true(settled, CONVERGE_S)
        await asyncio.to_thread(stop_all, fleet)
        await check(world, observer, sent)
        check_silent_when_cut_off(everyone)
    finally:
        await asyncio.to_thread(stop_all, fleet)
        keys = [key async for key in observer.client.scan_iter(match=f"{prefix}*")]
        if keys:
            await observer.client.delete(*keys)
        await observer.aclose()


def stop_all(fleet: list[SimProcess]) -> None:
    for process in fleet:
        if process.thread.is_alive():
            process.stop()


async def check(world: World, state: State, sent: dict[int, list[str]]) -> None:
    messages = list(world.slack.messages.values())
    assert not [m for m in messages if m.streaming], "a stream was left open"
    for message in messages:
        assert "stop_turn" not in json.dumps(message.blocks), message  # no Stop left
        assert "running…" not in message.text, message
        assert not message.open_tasks, message
    processing = [k for k, statuses in world.slack.sessions.items() if statuses[-1] == "processing"]
    assert not processing, f"agent sessions left processing: {processing}"
    assert await state.threads.dead_letters.latest() == []
    for thread, labels in sent.items():
        channel = f"C{thread}"
        answers: list[tuple[float, str]] = []
        for label in labels:
            shown = [
                m for m in messages if m.channel == channel and f"answer to {label}." in m.shown
            ]
            assert len(shown) == 1, f"{label}: {len(shown)} answers"
            answers.append((float(shown[0].ts), label))
        assert [label for _, label in sorted(answers)] == labels, "answers out of order"
        turns = await state.threads.history.load_turns(ThreadKey("T1", channel, ROOT))
        assert [t[0]["content"] for t in turns] == labels
        for turn in turns:
            assert repair(turn) == turn, turn
            assert turn[-1]["role"] == "assistant" and turn[-1]["content"] != UNDELIVERED
    assert all(runs <= 2 for runs in world.runs.values()), world.runs


# A call allowed under a lease was checked before its end (at most 0.7 of the TTL after a
# renewal sent before the cut); it reaches the fake Slack within this much more.
CALL_SLACK_S = 0.1


def check_silent_when_cut_off(processes: Sequence[SimProcess]) -> None:
    """No process wrote to Slack for a turn after its lease was gone: once cut off from
    Redis, from 0.7 of the TTL after the cut (no lease it held could cover a call any more)
    until it took a thread's lock again, after the heal."""
    for process in processes:
        faults = process.faults
        for start, end in faults.cuts:
            silent_from = start + 0.7 * LEASE_S + CALL_SLACK_S
            if end <= silent_from:
                continue  # too short to lose a lease
            silent_until = min((t for t in faults.acquired if t > start), default=float("inf"))
            spoke = [
                f"{method} +{at - start:.2f} s"
                for at, method in faults.slack_calls
                if silent_from < at < silent_until
            ]
            assert not spoke, f"{process.name}, cut off for {end - start:.2f} s, called {spoke}"


# SCHEDULE_EXAMPLES=500 for a long search; CI runs the default.
EXAMPLES = int(os.environ.get("SCHEDULE_EXAMPLES", "25"))
# pytest-timeout bounds the whole search, not one example. An example takes 0-2.3 s here
# (150 in 137 s on 2 vCPUs), several times that on a loaded CI machine: 60 s for the whole
# search once cut a passing run short, and Hypothesis took the cut for a failure (then spent
# five minutes shrinking it). A stuck example still fails on its own, after CONVERGE_S.
SEARCH_TIMEOUT_S = 60 + 8 * EXAMPLES


@pytest.mark.timeout(SEARCH_TIMEOUT_S)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(schedule=st.lists(steps, min_size=1, max_size=10), streaming=st.booleans())
# Found by the search (each failed about one run in three): a background post still in flight
# when the end looked for it, found nothing and forgot it; the answer was posted twice, or
# kept its Stop button.
@example(schedule=[Send(0), FailSlack(5), Pause(308)], streaming=False)
@example(
    schedule=[Send(0), Unconfirmed("chat.postMessage"), FailSlack(5), Pause(308)], streaming=False
)
# Cut off from Redis while the model thinks, then again mid-answer.
@example(schedule=[Send(0), Pause(60), Partition(0, 1500), Partition(1, 1500)], streaming=True)
@example(schedule=[Send(1), Pause(150), Partition(0, 900), Pause(400)], streaming=True)
# Found by the search (about one run in three): the turn taken over after its first owner set
# the agent session to "processing", the new owner's session call refused for now; nothing set
# the session back to "active" (tests/bot/slack/outbound/test_resume.py has it alone).
@example(
    schedule=[
        Send(1),
        KillAfterSlack(0, "chat.postMessage"),
        Pause(141),
        Pause(301),
        KillAfterRedis(1, 1),
        Kill(0),
        FailSlack(5),
        Pause(2),
        Pause(301),
        DropRedis(1, 2, False),
    ],
    streaming=False,
)
def test_every_message_is_answered_once_and_in_order_through_any_schedule(
    schedule: list[Step], streaming: bool
) -> None:
    if not any(isinstance(step, Send) for step in schedule):
        schedule = [Send(0), *schedule]
    asyncio.run(play(schedule, streaming))


pytestmark = pytest.mark.faults
