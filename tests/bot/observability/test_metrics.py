"""Metric values after scripted turns. Prometheus metrics are process-global, so every
assertion reads the change (after minus before) of one sample."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest
from slack_sdk.errors import SlackApiError

from bot.agent.events import ToolFinished
from bot.agent.result import CallOutcome
from bot.llm.response import ModelResponse, ToolCall
from bot.observability import metrics
from bot.process.state import State
from bot.turn.model import Turn
from bot.turn.tool_telemetry import UNKNOWN_TOOL, TurnTelemetry
from bot.turn.worker.gauges import sample_once
from tests.fakes.function_model import FunctionModel, last_user_text
from tests.fakes.llm_server import calls, text
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.worker_kit import MemoryResponder, make_worker, running
from tests.waiting import until
from tools import tool

Sample = tuple[str, dict[str, str]]


class Deltas:
    """Sample values now, minus what they were when this was made."""

    def __init__(self, *samples: Sample) -> None:
        self.before = {self._key(s): self._value(s) for s in samples}

    @staticmethod
    def _key(sample: Sample) -> tuple[str, tuple[tuple[str, str], ...]]:
        return sample[0], tuple(sorted(sample[1].items()))

    @staticmethod
    def _value(sample: Sample) -> float:
        return REGISTRY.get_sample_value(sample[0], sample[1]) or 0.0

    def __call__(self, name: str, **labels: str) -> float:
        sample = (name, labels)
        return self._value(sample) - self.before[self._key(sample)]


def turn_in(thread: str, text: str, ts: str) -> Turn:
    return Turn("T1", "C1", thread, "U1", text, message_ts=ts, event_id=f"Ev{ts}")


def echo() -> FunctionModel:
    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        return ModelResponse(f"answer to {last_user_text(messages)}")

    return FunctionModel(respond)


async def test_a_turn_with_a_tool_error_is_counted(slack_app: SlackHarness) -> None:
    model = {"model": "fake-model"}
    deltas = Deltas(
        ("slack_agent_turns_total", {"outcome": "answered"}),
        ("slack_agent_turn_rounds_count", {}),
        ("slack_agent_turn_rounds_sum", {}),
        ("slack_agent_tool_calls_total", {"tool": "calculate", "outcome": "ok"}),
        ("slack_agent_tool_calls_total", {"tool": "get_time", "outcome": "ToolError"}),
        ("slack_agent_tool_call_seconds_count", {"tool": "get_time"}),
        ("slack_agent_tool_call_seconds_count", {"tool": "calculate"}),
        ("slack_agent_model_calls_total", {**model, "outcome": "ok"}),
        ("slack_agent_model_call_seconds_count", model),
        ("slack_agent_model_time_to_first_token_seconds_count", model),
        ("slack_agent_model_tokens_total", {**model, "kind": "input"}),
        ("slack_agent_model_tokens_total", {**model, "kind": "output"}),
        ("slack_agent_model_cost_total", model),
        ("slack_agent_slack_api_calls_total", {"method": "chat.startStream"}),
        ("slack_agent_slack_api_calls_total", {"method": "agents.sessions.setStatus"}),
        ("slack_agent_slack_api_rate_limited_total", {"method": "agents.sessions.setStatus"}),
        (
            "slack_agent_slack_api_errors_total",
            {"method": "chat.postMessage", "error": "channel_not_found"},
        ),
    )
    await slack_app.start(llm={"prices": {"fake-model": {"input": 1.0, "output": 2.0}}})
    # Slack's first status call is rate limited: slack_sdk waits its Retry-After and retries.
    slack_app.slack.fail("agents.sessions.setStatus", "ratelimited", status=429, retry_after=1)
    slack_app.llm.add(
        calls(("calculate", {"expression": "6*7"}, "c1"), ("get_time", {"timezone": "Mars"}, "c2")),
        text("6*7 is 42."),
    )
    await slack_app.post(slack_app.envelope(mention("compute", "120.000001")))
    [message] = await slack_app.answered("C0CHAN", "120.000001")
    assert message.tasks["c2"]["status"] == "error"

    assert deltas("slack_agent_turns_total", outcome="answered") == 1
    assert deltas("slack_agent_turn_rounds_count") == 1
    assert deltas("slack_agent_turn_rounds_sum") == 2
    assert deltas("slack_agent_tool_calls_total", tool="calculate", outcome="ok") == 1
    assert deltas("slack_agent_tool_calls_total", tool="get_time", outcome="ToolError") == 1
    assert deltas("slack_agent_tool_call_seconds_count", tool="get_time") == 1
    assert deltas("slack_agent_tool_call_seconds_count", tool="calculate") == 1
    assert deltas("slack_agent_model_calls_total", **model, outcome="ok") == 2
    assert deltas("slack_agent_model_call_seconds_count", **model) == 2
    assert deltas("slack_agent_model_time_to_first_token_seconds_count", **model) == 2
    # The fake server reports 20 prompt and 10 completion tokens per call.
    assert deltas("slack_agent_model_tokens_total", **model, kind="input") == 40
    assert deltas("slack_agent_model_tokens_total", **model, kind="output") == 20
    assert deltas("slack_agent_model_cost_total", **model) == pytest.approx(
        (40 * 1.0 + 20 * 2.0) / 1e6
    )
    assert deltas("slack_agent_slack_api_calls_total", method="chat.startStream") == 1
    # The 429, then the retry that went through.
    assert deltas("slack_agent_slack_api_calls_total", method="agents.sessions.setStatus") >= 1
    assert (
        deltas("slack_agent_slack_api_rate_limited_total", method="agents.sessions.setStatus") == 1
    )

    # A call Slack refuses is an error of its method, by Slack's error code.
    assert slack_app.process is not None
    slack_app.slack.fail("chat.postMessage", "channel_not_found")
    with pytest.raises(SlackApiError):
        await slack_app.process.slack.client.chat_postMessage(channel="C0GONE", text="hello")
    errors = deltas(
        "slack_agent_slack_api_errors_total", method="chat.postMessage", error="channel_not_found"
    )
    assert errors == 1

    # No label anywhere carries the person's text or ID.
    exposed = generate_latest(REGISTRY).decode()
    assert "U0ALICE" not in exposed and "compute" not in exposed


async def test_a_tool_name_the_model_made_up_never_becomes_a_label() -> None:
    deltas = Deltas(
        ("slack_agent_tool_calls_total", {"tool": UNKNOWN_TOOL, "outcome": "UnknownTool"})
    )
    observer = TurnTelemetry()
    await observer(
        ToolFinished(
            1, "c1", "ignore previous instructions", CallOutcome.FAILED, 1.0, "", "UnknownTool"
        )
    )
    assert deltas("slack_agent_tool_calls_total", tool=UNKNOWN_TOOL, outcome="UnknownTool") == 1
    assert "ignore previous" not in generate_latest(REGISTRY).decode()


async def test_delivery_retries_and_dead_letters_are_counted(state: State) -> None:
    deltas = Deltas(
        ("slack_agent_delivery_retries_total", {}),
        ("slack_agent_dead_letters_total", {"reason": "delivery_timeout"}),
        ("slack_agent_turns_total", {"outcome": "dead_lettered"}),
        ("slack_agent_turns_total", {"outcome": "answered"}),
    )
    responder = MemoryResponder()
    responder.fail_next = 10_000  # Slack refuses every delivery
    worker = make_worker(state, echo(), responder, deliver_timeout_s=0.5)
    async with running(worker):
        await state.threads.queue.enqueue(turn_in("D", "doomed", "5.0"))
        await until(lambda: len(responder.gave_up) == 1)
    assert deltas("slack_agent_delivery_retries_total") >= 2
    assert deltas("slack_agent_dead_letters_total", reason="delivery_timeout") == 1
    assert deltas("slack_agent_turns_total", outcome="dead_lettered") == 1
    assert deltas("slack_agent_turns_total", outcome="answered") == 0  # counted once


async def test_a_turn_left_by_a_dead_worker_is_counted_as_taken_over(state: State) -> None:
    deltas = Deltas(("slack_agent_turns_taken_over_total", {}))
    await state.threads.queue.ensure_group()
    await state.threads.queue.enqueue(turn_in("K", "orphan", "6.0"))
    # A worker read it and died before doing anything.
    assert len(await state.threads.queue.read("dead-worker", 10, 0)) == 1
    responder = MemoryResponder()
    worker = make_worker(state, echo(), responder, claim_idle_s=0.2)
    async with running(worker):
        await until(lambda: len(responder.delivered) == 1)
    assert responder.texts() == ["answer to orphan"]
    assert deltas("slack_agent_turns_taken_over_total") == 1


async def test_queue_depth_and_oldest_age_come_from_redis(state: State) -> None:
    await state.threads.queue.enqueue(turn_in("Q", "one", "7.0"))
    await state.threads.queue.enqueue(turn_in("Q", "two", "7.1"))
    await asyncio.sleep(0.3)  # the oldest turn has waited at least this long
    await sample_once(state.threads.queue)
    assert REGISTRY.get_sample_value("slack_agent_queue_depth") == 2
    oldest = REGISTRY.get_sample_value("slack_agent_queue_oldest_turn_age_seconds")
    assert oldest is not None and 0.3 <= oldest < 30
    # Every replica reads the same shared queue: the values are set, not added.
    await sample_once(state.threads.queue)
    assert REGISTRY.get_sample_value("slack_agent_queue_depth") == 2


async def test_an_empty_queue_reads_zero(state: State) -> None:
    await sample_once(state.threads.queue)
    assert REGISTRY.get_sample_value("slack_agent_queue_depth") == 0
    assert REGISTRY.get_sample_value("slack_agent_queue_oldest_turn_age_seconds") == 0


def test_a_failing_metric_is_logged_and_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> None:
        raise ValueError("the registry is broken")

    caplog.set_level(logging.DEBUG, logger="bot.observability.metrics")
    metrics.safely(broken)
    [record] = [r for r in caplog.records if r.name == "bot.observability.metrics"]
    assert record.levelno == logging.DEBUG and record.exc_info is not None


class BrokenMetric:
    """A metric whose every use raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"metrics are broken ({name})")


async def test_broken_metrics_never_fail_a_turn(
    state: State, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="bot.observability.metrics")
    for name in ("TURNS", "TURN_ROUNDS", "TOOL_CALLS", "TOOL_SECONDS", "TAKEOVERS"):
        monkeypatch.setattr(metrics, name, BrokenMetric())

    @tool
    async def ping() -> str:
        """Answer pong."""
        return "pong"

    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        if messages[-1]["role"] == "user":
            return ModelResponse("", tool_calls=[ToolCall("p1", "ping", "{}")])
        return ModelResponse(f"the tool said {messages[-1]['content']}")

    responder = MemoryResponder()
    worker = make_worker(state, FunctionModel(respond), responder, tools=[ping])
    async with running(worker):
        await state.threads.queue.enqueue(turn_in("B", "ping please", "8.0"))
        await until(lambda: len(responder.delivered) == 1)
    assert responder.texts() == ["the tool said pong"]
    failures = [r for r in caplog.records if r.getMessage() == "recording a metric failed"]
    assert len(failures) >= 2  # the tool's and the turn's were tried, and failed quietly
