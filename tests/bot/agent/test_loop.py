"""The agent loop against the fake OpenAI server, through the real openai client."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from bot.agent import (
    AgentEvent,
    CallOutcome,
    LoopSettings,
    RoundStarted,
    StopReason,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    run_turn,
)
from bot.llm.client import OpenAIChatModel
from bot.llm.pricing import Price
from tests.fakes.llm_server import FakeLLM, Reply, calls, error, text, tool_results
from tools import ApprovalToolset, StaticToolset, Tool, ToolError, tool
from tools.approval import Approved, Refused, Verdict

MakeModel = Callable[..., OpenAIChatModel]


@tool
async def lookup_stock(item: str) -> dict[str, Any]:
    """Stock level of an item.

    Args:
        item: Item name.
    """
    return {"item": item, "stock": {"flour": 12, "sugar": 0}.get(item, 3)}


SPANS: list[tuple[float, float]] = []  # (start, end) of each slow tool run


@tool
async def slow(ms: int) -> str:
    """Sleep for ``ms`` milliseconds."""
    started = time.perf_counter()
    await asyncio.sleep(ms / 1000)
    SPANS.append((started, time.perf_counter()))
    return f"slept {ms}"


@tool
def slow_sync(ms: int) -> str:
    """Sleep for ``ms`` milliseconds in a thread."""
    started = time.perf_counter()
    time.sleep(ms / 1000)
    SPANS.append((started, time.perf_counter()))
    return f"slept {ms}"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"kaboom: {reason}")


@tool
def refuse(reason: str) -> str:
    """Fails with a clean tool error."""
    raise ToolError(f"cannot do that: {reason}")


@tool(timeout=0.2)
async def hang() -> str:
    """Never returns in time."""
    await asyncio.sleep(30)
    return "never"


@tool
def big() -> str:
    """Returns a lot of text."""
    return "A" * 5000 + "MIDDLE" + "Z" * 5000


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = StaticToolset([lookup_stock, slow, slow_sync, explode, refuse, hang, big, add])
SETTINGS = LoopSettings(system_prompt="You are a test bot.", tool_output_chars=1000)


class Recorder:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


async def test_one_tool_then_answer(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(calls(("lookup_stock", {"item": "flour"})), text("We have 12 bags of flour."))
    recorder = Recorder()
    result = await run_turn(make_model(), SETTINGS, [], "How much flour?", TOOLS, observer=recorder)

    assert result.stop_reason is StopReason.ANSWERED
    assert result.text == "We have 12 bags of flour."
    assert result.rounds == 2
    [execution] = result.executions
    assert execution.name == "lookup_stock"
    assert execution.ok
    assert json.loads(execution.output) == {"item": "flour", "stock": 12}
    assert json.loads(execution.arguments) == {"item": "flour"}
    assert execution.duration_ms >= 0
    # The model saw the tool result, after the system prompt and the question.
    second = fake_llm.requests[1]["messages"]
    assert second[0] == {"role": "system", "content": "You are a test bot."}
    assert second[1] == {"role": "user", "content": "How much flour?"}
    assert second[2]["tool_calls"][0]["function"]["name"] == "lookup_stock"
    assert json.loads(second[3]["content"])["stock"] == 12
    # The new messages are complete OpenAI messages: user, call, result, answer.
    roles = [m["role"] for m in result.new_messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.new_messages[2]["tool_call_id"] == result.new_messages[1]["tool_calls"][0]["id"]
    # Usage adds up over both calls; the observer saw the whole story in order.
    assert result.usage.prompt_tokens == 40 and result.usage.completion_tokens == 20
    kinds = [type(e).__name__ for e in recorder.events if not isinstance(e, TextDelta)]
    assert kinds == ["RoundStarted", "ToolStarted", "ToolFinished", "RoundStarted", "TurnFinished"]
    assert "".join(e.text for e in recorder.of(TextDelta)) == "We have 12 bags of flour."
    assert recorder.of(TurnFinished)[0].result is result


async def test_history_is_sent_before_the_new_message(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("Still 12."))
    history = [
        {"role": "user", "content": "How much flour?"},
        {"role": "assistant", "content": "12 bags."},
    ]
    result = await run_turn(make_model(), SETTINGS, history, "And now?", TOOLS)
    sent = fake_llm.requests[0]["messages"]
    assert [m["content"] for m in sent[1:]] == ["How much flour?", "12 bags.", "And now?"]
    assert result.new_messages == [
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": "Still 12."},
    ]


@pytest.mark.parametrize("tool_name", ["slow", "slow_sync"])
async def test_parallel_tools_run_concurrently(
    fake_llm: FakeLLM, make_model: MakeModel, tool_name: str
) -> None:
    fake_llm.add(
        calls((tool_name, {"ms": 200}), (tool_name, {"ms": 200}), (tool_name, {"ms": 200})),
        text("done"),
    )
    recorder = Recorder()
    SPANS.clear()
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, observer=recorder)

    assert result.text == "done"
    assert [e.ok for e in result.executions] == [True, True, True]
    # All three ran at once: each started before any of them finished.
    assert len(SPANS) == 3
    assert max(start for start, _ in SPANS) < min(end for _, end in SPANS)
    # All three started before any finished.
    tool_events = [e for e in recorder.events if isinstance(e, ToolStarted | ToolFinished)]
    assert [type(e).__name__ for e in tool_events[:3]] == ["ToolStarted"] * 3


async def test_results_enter_in_the_models_call_order(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(
        calls(("slow", {"ms": 150}, "first"), ("slow", {"ms": 10}, "second")),
        text("ok"),
    )
    recorder = Recorder()
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, observer=recorder)
    finished = [e.call_id for e in recorder.of(ToolFinished)]
    assert finished == ["second", "first"]  # the short one finished first...
    sent = fake_llm.requests[1]["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["first", "second"]
    assert [e.call_id for e in result.executions] == ["first", "second"]


async def test_a_call_depends_on_the_previous_rounds_result(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    def second_round(request: dict[str, Any]) -> Reply:
        stock = json.loads(tool_results(request)["call_1"])["stock"]
        return calls(("add", {"a": stock, "b": 8}, "call_2"))

    def answer(request: dict[str, Any]) -> Reply:
        return text(f"Total: {tool_results(request)['call_2']}")

    fake_llm.add(calls(("lookup_stock", {"item": "flour"}, "call_1")), second_round, answer)
    result = await run_turn(make_model(), SETTINGS, [], "flour plus 8?", TOOLS)
    assert result.text == "Total: 20"
    assert [e.name for e in result.executions] == ["lookup_stock", "add"]
    assert [e.round for e in result.executions] == [1, 2]
    assert result.rounds == 3


async def _error_of(fake_llm: FakeLLM, make_model: MakeModel, reply: Reply) -> dict[str, Any]:
    """Run a turn whose first round is ``reply``; return the error the model read."""
    fake_llm.add(reply, text("I could not do that."))
    result = await run_turn(make_model(), SETTINGS, [], "try", TOOLS)
    assert result.stop_reason is StopReason.ANSWERED
    assert result.text == "I could not do that."
    [execution] = result.executions
    assert not execution.ok
    sent = json.loads(tool_results(fake_llm.requests[1])[execution.call_id])
    assert sent["error"] == execution.error
    return dict(sent)


async def test_a_tool_exception_becomes_a_result(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    error_result = await _error_of(fake_llm, make_model, calls(("explode", {"reason": "x"})))
    assert error_result == {"error": "RuntimeError", "message": "kaboom: x"}


async def test_a_tool_error_keeps_its_message(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    error_result = await _error_of(fake_llm, make_model, calls(("refuse", {"reason": "y"})))
    assert error_result == {"error": "ToolError", "message": "cannot do that: y"}


async def test_a_timeout_becomes_a_result(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    started = time.perf_counter()
    error_result = await _error_of(fake_llm, make_model, calls(("hang", {})))
    assert error_result == {"error": "TimeoutError", "message": "hang took longer than 0.2 s"}
    assert time.perf_counter() - started < 5


async def test_default_timeout_comes_from_settings(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(calls(("slow", {"ms": 2000})), text("ok"))
    settings = LoopSettings(system_prompt="s", tool_timeout_s=0.1)
    result = await run_turn(make_model(), settings, [], "go", TOOLS)
    assert result.executions[0].error == "TimeoutError"
    assert "slow took longer than 0.1 s" in result.executions[0].output


async def test_invalid_json_arguments(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    error_result = await _error_of(fake_llm, make_model, calls(("add", '{"a": 1, "b": ')))
    assert error_result["error"] == "InvalidJSON"
    assert "not valid JSON" in error_result["message"]


async def test_arguments_that_are_not_an_object(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    error_result = await _error_of(fake_llm, make_model, calls(("add", "[1, 2]")))
    assert error_result["error"] == "InvalidJSON"
    assert "JSON object" in error_result["message"]


async def test_a_validation_error_names_the_field(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    error_result = await _error_of(fake_llm, make_model, calls(("add", {"a": "one", "c": 2})))
    assert error_result["error"] == "InvalidArguments"
    message = error_result["message"]
    assert "a: Input should be a valid integer" in message
    assert "b: Field required" in message
    assert "c: Extra inputs are not permitted" in message


async def test_an_unknown_tool(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    error_result = await _error_of(fake_llm, make_model, calls(("delete_everything", {})))
    assert error_result == {
        "error": "UnknownTool",
        "message": "There is no tool named 'delete_everything'.",
    }


async def test_one_failure_does_not_spoil_the_others(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(
        calls(("explode", {"reason": "r"}), ("add", {"a": 1, "b": 2}), ("nope", {})),
        text("partial answer"),
    )
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS)
    assert [e.ok for e in result.executions] == [False, True, False]
    assert result.executions[1].output == "3"
    assert result.text == "partial answer"


async def test_round_limit_ends_with_an_answer_without_tools(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    settings = LoopSettings(system_prompt="s", max_rounds=3)
    for n in range(3):
        fake_llm.add(calls(("add", {"a": n, "b": 1}, f"c{n}")))
    fake_llm.add(text("Here is what I found: 1, 2, 3."))
    result = await run_turn(make_model(), settings, [], "loop forever", TOOLS)

    assert result.stop_reason is StopReason.ROUND_LIMIT
    assert result.text == "Here is what I found: 1, 2, 3."
    assert result.rounds == 4
    assert len(result.executions) == 3
    last = fake_llm.requests[-1]
    assert last["tool_choice"] == "none"
    assert all("tool_choice" not in r for r in fake_llm.requests[:-1])
    # The final call still carries every result gathered.
    assert set(tool_results(last)) == {"c0", "c1", "c2"}
    assert result.new_messages[-1] == {
        "role": "assistant",
        "content": "Here is what I found: 1, 2, 3.",
    }


async def test_round_limit_when_the_model_ignores_tool_choice(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    settings = LoopSettings(system_prompt="s", max_rounds=1)
    fake_llm.add(calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 2, "b": 2}), content="2."))
    result = await run_turn(make_model(), settings, [], "go", TOOLS)
    assert result.stop_reason is StopReason.ROUND_LIMIT
    assert result.text == "2."
    assert len(result.executions) == 1  # the ignored call never ran


async def test_llm_500_then_success(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(error(500), text("recovered"))
    result = await run_turn(make_model(max_retries=2), SETTINGS, [], "hi", TOOLS)
    assert result.stop_reason is StopReason.ANSWERED
    assert result.text == "recovered"
    assert len(fake_llm.requests) == 2


async def test_llm_failing_after_retries(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(error(503), error(503))
    result = await run_turn(make_model(max_retries=1), SETTINGS, [], "hi", TOOLS)
    assert result.stop_reason is StopReason.FAILED
    assert result.text == "The model service had an error. Please try again in a minute."
    assert result.error_detail is not None and "503" in result.error_detail
    assert result.new_messages == [{"role": "user", "content": "hi"}]


async def test_llm_down(make_model: MakeModel) -> None:
    from bot.config.schema import LLMConfig

    model = OpenAIChatModel(
        LLMConfig(model="m", max_retries=0, timeout_s=2),
        api_key="k",
        base_url="http://127.0.0.1:9/v1",  # the discard port: nothing listens
    )
    try:
        result = await run_turn(model, SETTINGS, [], "hi", TOOLS)
    finally:
        await model.aclose()
    assert result.stop_reason is StopReason.FAILED
    assert result.text == (
        "The model service is not answering right now. Please try again in a minute."
    )
    assert "Traceback" not in result.text and "Error" not in result.text


async def test_a_stream_cut_mid_answer_fails_cleanly(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("This answer will be cut off in the middle", drop_after_chunks=4))
    result = await run_turn(make_model(max_retries=0), SETTINGS, [], "hi", TOOLS)
    assert result.stop_reason is StopReason.FAILED
    assert result.text.startswith("The model service")


async def test_llm_failure_after_a_tool_round_keeps_the_round(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(calls(("add", {"a": 1, "b": 2}, "c1")), error(500), error(500))
    result = await run_turn(make_model(max_retries=1), SETTINGS, [], "hi", TOOLS)
    assert result.stop_reason is StopReason.FAILED
    assert [m["role"] for m in result.new_messages] == ["user", "assistant", "tool"]
    assert result.executions[0].output == "3"


async def test_streamed_tool_call_deltas(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    long_item = "flour " * 20
    fake_llm.add(
        calls(
            ("lookup_stock", {"item": long_item.strip()}, "a"),
            ("add", {"a": 40, "b": 2}, "b"),
            content="Let me check both.",
            args_piece=3,
        ),
        text("Checked."),
    )
    recorder = Recorder()
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, observer=recorder)
    assert [(e.call_id, e.name) for e in result.executions] == [("a", "lookup_stock"), ("b", "add")]
    assert json.loads(result.executions[0].arguments) == {"item": long_item.strip()}
    assert result.executions[1].output == "42"
    assert result.new_messages[1]["content"] == "Let me check both."
    commentary = [e.text for e in recorder.of(TextDelta) if e.round == 1]
    assert "".join(commentary) == "Let me check both."


@pytest.mark.parametrize("style", ["missing", "zero"])
async def test_tool_call_deltas_from_servers_without_proper_indexes(
    fake_llm: FakeLLM, make_model: MakeModel, style: str
) -> None:
    fake_llm.add(
        calls(("add", {"a": 1, "b": 1}, "x"), ("add", {"a": 2, "b": 2}, "y"), index_style=style),
        text("ok"),
    )
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS)
    assert [(e.call_id, e.output) for e in result.executions] == [("x", "2"), ("y", "4")]


async def test_missing_and_repeated_call_ids_are_made_unique(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(
        calls(
            ("add", {"a": 1, "b": 1}, ""),
            ("add", {"a": 2, "b": 2}, "dup"),
            ("add", {"a": 3, "b": 3}, "dup"),
        ),
        text("ok"),
    )
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS)
    ids = [e.call_id for e in result.executions]
    assert len(set(ids)) == 3 and all(ids)
    assert [e.output for e in result.executions] == ["2", "4", "6"]
    assert set(tool_results(fake_llm.requests[1])) == set(ids)


async def test_cancelling_a_turn_cancels_running_tools(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    cancelled: list[str] = []

    @tool
    async def long_job(name: str) -> str:
        """A job that takes a while."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        return "finished"

    toolset = StaticToolset([long_job, add])
    fake_llm.add(calls(("add", {"a": 1, "b": 1}, "quick"), ("long_job", {"name": "j"}, "long")))
    cancel = asyncio.Event()
    recorder = Recorder()

    async def stop_when_long_job_starts(event: AgentEvent) -> None:
        await recorder(event)
        if isinstance(event, ToolStarted) and event.name == "long_job":
            asyncio.get_running_loop().call_later(0.1, cancel.set)

    started = time.perf_counter()
    result = await run_turn(
        make_model(),
        SETTINGS,
        [],
        "go",
        toolset,
        observer=stop_when_long_job_starts,
        cancel=cancel,
    )
    assert time.perf_counter() - started < 3
    assert result.stop_reason is StopReason.CANCELLED
    assert result.text == "Stopped before the answer was finished."
    assert cancelled == ["j"]
    assert [(e.call_id, e.outcome, e.error) for e in result.executions] == [
        ("quick", CallOutcome.OK, None),
        ("long", CallOutcome.CANCELLED, "Cancelled"),  # the kind the model reads
    ]
    # History stays whole: each call has its result.
    assert [m["role"] for m in result.new_messages] == ["user", "assistant", "tool", "tool"]
    assert len(fake_llm.requests) == 1  # no further model call
    stopped = [e for e in recorder.of(ToolFinished) if e.call_id == "long"]
    assert stopped[0].outcome is CallOutcome.CANCELLED


async def test_cancelling_while_the_model_streams(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(text("slow answer", delay_s=5))
    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, cancel.set)
    started = time.perf_counter()
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, cancel=cancel)
    assert time.perf_counter() - started < 2
    assert result.stop_reason is StopReason.CANCELLED
    assert result.new_messages == [{"role": "user", "content": "go"}]


async def test_long_output_is_cut_keeping_head_and_tail(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(calls(("big", {})), text("ok"))
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS)
    output = result.executions[0].output
    assert len(output) <= 1000
    assert output.startswith("AAAA") and output.endswith("ZZZZ")
    assert "MIDDLE" not in output
    dropped = 10006 - len(output.split("\n[...")[0]) - len(output.rsplit("...]\n")[1])
    assert f"[... {dropped} characters dropped ...]" in output
    assert tool_results(fake_llm.requests[1])[result.executions[0].call_id] == output


async def test_an_observer_that_raises_cannot_break_the_turn(
    fake_llm: FakeLLM, make_model: MakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(event: AgentEvent) -> None:
        raise ValueError("observer bug")

    fake_llm.add(calls(("add", {"a": 1, "b": 2})), text("three"))
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, observer=broken)
    assert result.stop_reason is StopReason.ANSWERED
    assert result.text == "three"
    assert result.executions[0].output == "3"
    assert "observer failed on RoundStarted" in caplog.text


async def test_tools_needing_confirmation(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    """Approval is a wrapper toolset; a call whose tool still needs it when it reaches the
    loop (no wrapper stood in front of it) is refused: the loop fails closed."""
    ran: list[str] = []

    @tool(confirm=True)
    def place_order(item: str) -> str:
        """Place an order."""
        ran.append(item)
        return "ordered"

    async def only_ok(t: Tool, arguments: dict[str, Any]) -> Verdict:
        return Approved() if arguments["item"] == "ok" else Refused()

    asked = ApprovalToolset(StaticToolset([place_order]), only_ok)
    fake_llm.add(
        calls(("place_order", {"item": "no"}, "a")),
        text("declined"),
        calls(("place_order", {"item": "ok"}, "b")),
        text("placed"),
        calls(("place_order", {"item": "x"}, "c")),
        text("nobody asked"),
    )
    first = await run_turn(make_model(), SETTINGS, [], "order", asked)
    second = await run_turn(make_model(), SETTINGS, [], "order", asked)
    third = await run_turn(make_model(), SETTINGS, [], "order", StaticToolset([place_order]))
    assert first.executions[0].error == "NotConfirmed"
    assert second.executions[0].ok
    assert third.executions[0].error == "NeedsConfirmation"
    assert ran == ["ok"]


async def test_cost_from_the_price_table(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(text("hi", usage=(1_000_000, 500_000)))
    settings = LoopSettings(system_prompt="s", price=Price(input=0.15, output=0.60))
    result = await run_turn(make_model(), settings, [], "hi", TOOLS)
    assert result.cost == pytest.approx(0.15 + 0.30)
    unpriced = await run_turn(make_model(), SETTINGS, [], "hi", TOOLS)
    assert unpriced.cost is None


async def test_an_empty_answer_gets_plain_words(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(text(""))
    result = await run_turn(make_model(), SETTINGS, [], "hi", TOOLS)
    assert result.stop_reason is StopReason.ANSWERED
    assert result.text == "The model gave an empty answer. Please try rephrasing your question."


async def test_dangling_history_is_repaired_before_the_call(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "earlier"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "lost", "type": "function", "function": {"name": "add", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "orphan", "content": "stray"},
    ]
    fake_llm.add(text("fine"))
    await run_turn(make_model(), SETTINGS, history, "now", TOOLS)
    sent = fake_llm.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3]["tool_call_id"] == "lost"
    assert json.loads(sent[3]["content"])["error"] == "Interrupted"


async def test_rounds_are_announced(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(calls(("add", {"a": 1, "b": 1})), text("2"))
    recorder = Recorder()
    await run_turn(make_model(), SETTINGS, [], "go", TOOLS, observer=recorder)
    assert [e.round for e in recorder.of(RoundStarted)] == [1, 2]
    finished = recorder.of(ToolFinished)[0]
    assert finished.ok and finished.preview == "2" and finished.error is None


async def test_an_answer_cut_by_the_token_limit_says_so(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("The list goes: one, two, thr", finish_reason="length"))
    result = await run_turn(make_model(), SETTINGS, [], "list", TOOLS)
    assert result.text == (
        "The list goes: one, two, thr\n\n"
        "_(This answer reached the model's length limit. Ask me to continue.)_"
    )
    # The history keeps what the model wrote, so "continue" can pick up from it.
    assert result.new_messages[-1] == {
        "role": "assistant",
        "content": "The list goes: one, two, thr",
    }
