"""The Slack view picking up where Slack or an earlier attempt left it: a post Slack applied
without confirming, a stream left open, a stream too slow to take its text, a progress
message someone deleted, Redis failing under the delivery record, notices. The real
AsyncWebClient is answered in memory by the fake Slack."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
import redis.exceptions

from bot.agent.events import RoundStarted, TextDelta, ToolFinished, ToolStarted
from bot.agent.result import CallOutcome, StopReason
from bot.config.schema import SlackConfig
from bot.process.state import State
from bot.slack.outbound.responder import SlackResponder
from bot.state.redis.commands import Commands
from bot.turn.model import QueuedTurn, Turn, TurnKind
from bot.turn.ports import DeliveryFailed, Settled
from bot.turn.store.notices import Notice
from tests.fakes.deadline import NoDeadline
from tests.fakes.in_memory_slack import InMemorySlack
from tests.fakes.slack_server import FakeSlack, Message
from tests.waiting import until


class Fence(NoDeadline):
    """Always valid; keeps the last saved delivery record; can fail saves like Redis."""

    def __init__(self) -> None:
        self.saved: dict[str, Any] = {}
        self.fail_saves = 0

    def valid(self) -> bool:
        return True

    async def save_delivery(self, record: dict[str, Any]) -> None:
        if self.fail_saves:
            self.fail_saves -= 1
            raise redis.exceptions.ConnectionError("Redis is away")
        self.saved = dict(record)


class Slack:
    """The fake Slack world, a client into it, and faults: calls that fail before they are
    applied (an HTTP status), calls that are applied and then time out, slow methods."""

    def __init__(self) -> None:
        self.world = FakeSlack()
        self.refuse: dict[str, list[int]] = {}
        self.unconfirmed: list[str] = []
        self.slow: dict[str, float] = {}
        self.called: list[str] = []
        self.finished: list[str] = []
        slack = self

        class Client(InMemorySlack):
            async def api_call(self, api_method: str, **kwargs: Any) -> Any:
                slack.called.append(api_method)
                if api_method in slack.slow:
                    await asyncio.sleep(slack.slow[api_method])
                response = await super().api_call(api_method, **kwargs)
                slack.finished.append(api_method)
                return response

        self.client = Client(self.world, threading.Lock(), before=self._before, after=self._after)

    def _before(self, method: str) -> int | None:
        statuses = self.refuse.get(method)
        return statuses.pop(0) if statuses else None

    def _after(self, method: str) -> None:
        if method in self.unconfirmed:
            self.unconfirmed.remove(method)
            raise TimeoutError(f"{method}: applied, but the answer never came")

    def thread(self, thread_ts: str) -> list[Message]:
        """The bot's messages in the thread, oldest first."""
        return self.world.thread("C1", thread_ts)


def turn_at(ts: str) -> Turn:
    return Turn("T1", "C1", ts, "U1", "question", message_ts=ts)


def kinds(messages: list[Message]) -> list[tuple[str, str, bool]]:
    """(kind, shown text, has a Stop button) of each message."""
    return [
        (
            str(((m.metadata or {}).get("event_payload") or {}).get("kind")),
            m.shown,
            "stop_turn" in json.dumps(m.blocks),
        )
        for m in messages
    ]


async def deliver_until_taken(view: Any, settled: Settled, attempts: int = 5) -> int:
    for attempt in range(attempts):
        try:
            await view.deliver(settled)
            return attempt
        except DeliveryFailed:
            continue
    raise AssertionError("never delivered")


@pytest.fixture
def slack() -> Slack:
    created = Slack()
    created.world.add_user_message("C1", "100.000001", "U1", "question")
    created.world.add_user_message("C1", "200.000001", "U1", "question")
    created.world.add_user_message("C1", "300.000001", "U1", "question")
    return created


async def test_a_post_slack_applied_without_confirming_is_not_posted_again(
    slack: Slack,
) -> None:
    slack.unconfirmed.append("chat.postMessage")
    responder = SlackResponder(slack.client, SlackConfig(streaming=False))
    async with responder.view(QueuedTurn("1-0", turn_at("100.000001")), {}, Fence()) as view:
        retries = await deliver_until_taken(view, Settled("the answer", StopReason.ANSWERED))
    assert retries == 1
    assert kinds(slack.thread("100.000001")) == [("answer", "the answer", False)]


async def test_a_progress_post_slack_applied_without_confirming_is_taken_over(
    slack: Slack,
) -> None:
    slack.unconfirmed.append("chat.postMessage")
    responder = SlackResponder(slack.client, SlackConfig(streaming=False, edit_interval_s=0.2))
    async with responder.view(QueuedTurn("2-0", turn_at("200.000001")), {}, Fence()) as view:
        await view.observe(RoundStarted(1))
        await view.observe(ToolStarted(1, "c1", "calc", "{}"))
        await asyncio.sleep(0.3)  # the progress post went out, its answer never came
        await view.observe(ToolFinished(1, "c1", "calc", CallOutcome.OK, 5.0, "4", None))
        results = [{"role": "tool", "tool_call_id": "c1", "content": "4"}]
        await deliver_until_taken(view, Settled("4", StopReason.ANSWERED, results))
    [message] = slack.thread("200.000001")  # the turn's one message, not a second copy
    assert kinds([message]) == [("answer", "4", False)]
    assert "`calc` done in 5 ms" in message.blocks[0]["elements"][0]["text"]


async def test_a_stream_an_earlier_attempt_left_open_is_ended_and_replaced(
    slack: Slack,
) -> None:
    # The earlier attempt started a stream and died before recording it; Slack cannot be
    # asked about the thread at first.
    await slack.client.chat_startStream(
        channel="C1", thread_ts="300.000001", markdown_text="The answer, first half"
    )
    slack.refuse["conversations.replies"] = [503]
    config = SlackConfig(streaming=True, edit_interval_s=0.2)
    answer = "The answer, in full. " * 5
    fence = Fence()
    async with SlackResponder(slack.client, config).view(
        QueuedTurn("3-0", turn_at("300.000001")), {"first_posting": True}, fence
    ) as view:
        await view.observe(RoundStarted(1))
        await view.observe(TextDelta(1, answer))
        await asyncio.sleep(0.3)
        await deliver_until_taken(view, Settled(answer, StopReason.ANSWERED))
    [message] = slack.thread("300.000001")
    assert not message.streaming
    assert message.shown == answer
    assert fence.saved["parts"] == {"0": message.ts}


async def test_a_stream_too_slow_to_take_its_text_is_not_cut(slack: Slack) -> None:
    slack.slow["chat.appendStream"] = 3.0  # e.g. a 429 slept inside the call
    config = SlackConfig(streaming=True, stream_buffer_chars=1, edit_interval_s=0.2)
    pieces = [f"sentence {n} of the answer. " for n in range(12)]
    async with SlackResponder(slack.client, config).view(
        QueuedTurn("4-0", turn_at("100.000001")), {}, Fence()
    ) as view:
        await view.observe(RoundStarted(1))
        for piece in pieces:
            await view.observe(TextDelta(1, piece))
            await asyncio.sleep(0.02)  # the stream starts, then each append is slow
        await view.deliver(Settled("".join(pieces), StopReason.ANSWERED))
    [message] = slack.thread("100.000001")
    assert message.shown == "".join(pieces) and not message.streaming
    assert "chat.appendStream" in slack.called  # a slow append was under way at the end


async def test_redis_failing_under_the_delivery_record_is_tried_again(slack: Slack) -> None:
    fence = Fence()
    fence.fail_saves = 1  # the record cannot be saved before the first post
    async with SlackResponder(slack.client, SlackConfig(streaming=False)).view(
        QueuedTurn("5-0", turn_at("100.000001")), {}, fence
    ) as view:
        with pytest.raises(DeliveryFailed, match="Redis"):
            await view.deliver(Settled("the answer", StopReason.ANSWERED))
        await view.deliver(Settled("the answer", StopReason.ANSWERED))
    assert kinds(slack.thread("100.000001")) == [("answer", "the answer", False)]


async def test_a_progress_message_someone_deleted_does_not_fail_the_delivery(
    slack: Slack,
) -> None:
    config = SlackConfig(streaming=False, edit_interval_s=0.2)
    async with SlackResponder(slack.client, config).view(
        QueuedTurn("6-0", turn_at("200.000001")), {}, Fence()
    ) as view:
        await view.observe(RoundStarted(1))
        await view.observe(ToolStarted(1, "c1", "calc", "{}"))
        await asyncio.sleep(0.3)
        [progress] = slack.thread("200.000001")
        await slack.client.chat_delete(channel="C1", ts=progress.ts)
        await view.deliver(Settled("4", StopReason.ANSWERED))
    assert kinds(slack.thread("200.000001")) == [("answer", "4", False)]


async def test_a_notice_closes_what_its_turn_left_and_is_posted_once(
    slack: Slack, state: State
) -> None:
    # The turn left its message with a tool still running and a Stop button, its ts never
    # recorded.
    posted = await slack.client.chat_postMessage(
        channel="C1",
        thread_ts="300.000001",
        text="running",
        blocks=[{"type": "actions", "elements": []}],
        metadata={
            "event_type": "slack_agent",
            "event_payload": {"message": "300.000001", "turn": "7-0", "kind": "answer", "part": 0},
        },
    )
    delivery = {
        "first_posting": True,
        "tasks": [{"call_id": "c1", "name": "etl", "state": "running"}],
    }
    commands = Commands()
    state.threads.notices.add_to(
        commands, Notice("7-0", "T1", "C1", "300.000001", "300.000001", "Sorry.", delivery)
    )
    async with state.client.pipeline(transaction=True) as pipe:
        for command in commands.items:
            pipe.execute_command(*command)
        await pipe.execute()
    responder = SlackResponder(slack.client, SlackConfig())
    [first] = await state.threads.notices.take_due(lease_s=0)
    await responder.post_notice(first, NoDeadline())  # the worker died before marking it done
    [again] = await state.threads.notices.take_due(lease_s=0)
    assert again.taken == 2
    await responder.post_notice(again, NoDeadline())
    await state.threads.notices.done(again)
    shown = kinds(slack.thread("300.000001"))
    assert shown == [
        ("answer", "_Could not finish this answer._", False),
        ("notice", "Sorry.", False),
    ]
    [message] = [m for m in slack.thread("300.000001") if m.ts == posted["ts"]]
    assert "`etl` stopped" in message.blocks[0]["elements"][0]["text"]
    assert slack.world.session("C1", "300.000001") == "active"


async def test_the_view_never_makes_the_loop_wait_on_slack(slack: Slack) -> None:
    slack.slow["agents.sessions.setStatus"] = 2.0
    turn = Turn(
        "T1",
        "C1",
        "100.000001",
        "U1",
        "q",
        "100.000001",
        kind=TurnKind.ASSISTANT,
        new_thread=True,
    )
    async with SlackResponder(slack.client, SlackConfig()).view(
        QueuedTurn("8-0", turn), {}, Fence()
    ) as view:
        await view.observe(RoundStarted(1))  # returns at once
        await until(lambda: "agents.sessions.setStatus" in slack.called)
        assert slack.finished == []  # still waiting on Slack; the loop went on


async def test_every_card_a_stream_shows_is_stored_before_the_call_that_shows_it(
    slack: Slack,
) -> None:
    """Whoever resumes the turn must know every card the stream shows, or a card left
    "running" could never be closed: each is in the stored record before the call."""
    fence = Fence()
    unsaved: list[str] = []
    calls = slack.client.api_call

    async def checked(api_method: str, **kwargs: Any) -> Any:
        if api_method in ("chat.startStream", "chat.appendStream"):
            args = {**(kwargs.get("json") or {}), **(kwargs.get("data") or {})}
            chunks = args.get("chunks") or []
            chunks = json.loads(chunks) if isinstance(chunks, str) else chunks
            stored = {task["call_id"] for task in fence.saved.get("tasks", [])}
            unsaved.extend(
                c["id"] for c in chunks if c["type"] == "task_update" and c["id"] not in stored
            )
        return await calls(api_method, **kwargs)

    slack.client.api_call = checked  # type: ignore[method-assign]
    config = SlackConfig(streaming=True, stream_buffer_chars=1)
    async with SlackResponder(slack.client, config).view(
        QueuedTurn("9-0", turn_at("100.000001")), {}, fence
    ) as view:
        await view.observe(RoundStarted(1))
        for n in range(4):
            await view.observe(ToolStarted(1, f"c{n}", "calc", "{}"))
            await asyncio.sleep(0.01)
            await view.observe(ToolFinished(1, f"c{n}", "calc", CallOutcome.OK, 5.0, "4", None))
        await view.deliver(Settled("4", StopReason.ANSWERED))
    assert "chat.appendStream" in slack.called
    assert unsaved == []


async def test_a_session_left_processing_goes_back_to_active_though_slack_failed_for_now(
    slack: Slack,
) -> None:
    """An earlier attempt set the agent session to "processing" and died; this attempt's
    own session call fails for now (a 503), so it cannot tell whether sessions work here:
    its end sets the session back to "active" all the same."""
    await slack.client.agents_sessions_setStatus(
        channel_id="C1", thread_ts="100.000001", status="processing"
    )
    slack.refuse["agents.sessions.setStatus"] = [503]
    slack.refuse["assistant.threads.setStatus"] = [503]
    async with SlackResponder(slack.client, SlackConfig(streaming=False)).view(
        QueuedTurn("10-0", turn_at("100.000001")), {}, Fence()
    ) as view:
        await view.observe(RoundStarted(1))  # the status starts, and Slack refuses it for now
        await view.deliver(Settled("the answer", StopReason.ANSWERED))  # after the start
    assert slack.called.count("agents.sessions.setStatus") == 3  # earlier, refused, the end
    assert slack.world.sessions[("C1", "100.000001")] == ["processing", "active"]
    assert kinds(slack.thread("100.000001")) == [("answer", "the answer", False)]
