"""Saving a turn as it goes, and resuming it after a crash without repeating work."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.agent import CallOutcome, LoopSettings, StopReason, run_turn
from bot.agent.journal import resume_from
from bot.agent.messages import assistant_message, tool_message, user_message
from bot.agent.result import ToolExecution
from bot.llm.client import OpenAIChatModel
from bot.llm.response import ToolCall
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results
from tools import StaticToolset, tool
from tools.errors import CallDeferred

MakeModel = Callable[..., OpenAIChatModel]
SETTINGS = LoopSettings(system_prompt="s")
RUNS: list[str] = []


@tool
async def work(name: str, ms: int = 0) -> str:
    """Do some work."""
    RUNS.append(name)
    await asyncio.sleep(ms / 1000)
    return f"did {name}"


TOOLS = StaticToolset([work])


@tool(idempotent=False)
async def pay(name: str) -> str:
    """Pay someone (must not run twice)."""
    RUNS.append("pay " + name)
    return f"paid {name}"


TOOLS_WITH_PAY = StaticToolset([work, pay])


class ListJournal:
    def __init__(self) -> None:
        self.saved: list[dict[str, Any]] = []
        self.reruns: set[str] = set()
        self.calls: list[ToolExecution] = []  # handed with their saved results

    async def record(self, message: dict[str, Any]) -> None:
        self.saved.append(message)

    async def record_call(self, execution: ToolExecution, message: dict[str, Any]) -> None:
        await self.record(message)
        self.calls.append(execution)

    async def claim_rerun(self, call_id: str) -> bool:
        if call_id in self.reruns:
            return False
        self.reruns.add(call_id)
        return True


def round_of(*names: str) -> dict[str, Any]:
    return assistant_message("", [ToolCall(n, "work", json.dumps({"name": n})) for n in names])


async def test_each_message_is_saved_the_moment_it_is_final(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(
        calls(("work", {"name": "slow", "ms": 150}, "slow"), ("work", {"name": "fast"}, "fast")),
        text("done"),
    )
    journal = ListJournal()
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, journal=journal)
    roles = [(m["role"], m.get("tool_call_id")) for m in journal.saved]
    # The user message, the calls before they ran, then results as they finished.
    assert roles == [("user", None), ("assistant", None), ("tool", "fast"), ("tool", "slow")]
    # Each result is handed with how its call ran (what a surface audits in that step).
    assert [(e.call_id, e.name, e.outcome) for e in journal.calls] == [
        ("fast", "work", CallOutcome.OK),
        ("slow", "work", CallOutcome.OK),
    ]
    # The stored turn has results in call order, and the answer.
    assert [m.get("tool_call_id") for m in result.new_messages] == [
        None,
        None,
        "slow",
        "fast",
        None,
    ]


async def test_resume_runs_only_the_calls_without_saved_results(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    RUNS.clear()
    saved = [
        user_message("go"),
        round_of("a", "b", "c"),
        tool_message("b", "did b (before the crash)"),
    ]
    fake_llm.add(text("all done"))
    journal = ListJournal()
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, journal=journal, resume=saved)
    assert sorted(RUNS) == ["a", "c"]  # b's result was saved: it does not run again
    assert result.stop_reason is StopReason.ANSWERED
    assert result.rounds == 2  # the round before the crash counts
    sent = fake_llm.requests[0]["messages"]
    assert [m["role"] for m in sent].count("user") == 1  # the user message is not added twice
    assert [m.get("tool_call_id") for m in sent if m["role"] == "tool"] == ["a", "b", "c"]
    assert tool_results(fake_llm.requests[0])["b"] == "did b (before the crash)"
    assert [m["role"] for m in result.new_messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
    ]
    assert [e.call_id for e in result.executions] == ["a", "c"]
    # Only the new results were journaled; the user message was not saved again.
    assert sorted(m["tool_call_id"] for m in journal.saved) == ["a", "c"]


async def test_a_call_cut_off_twice_is_not_run_a_third_time(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    RUNS.clear()
    saved = [user_message("go"), round_of("a", "b")]
    journal = ListJournal()
    journal.reruns.add("a")  # a crash already cut off the rerun of "a"
    fake_llm.add(text("done"))
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, journal=journal, resume=saved)
    assert RUNS == ["b"]  # "b" runs again once; "a" does not run a third time
    results = tool_results(fake_llm.requests[0])
    assert json.loads(results["a"])["error"] == "Interrupted"
    assert "whether it took effect is unknown" in json.loads(results["a"])["message"]
    assert results["b"] == "did b"
    assert {m["tool_call_id"] for m in journal.saved} == {"a", "b"}  # both results saved
    assert [(e.outcome, e.error) for e in result.executions] == [
        (CallOutcome.INTERRUPTED, "Interrupted"),
        (CallOutcome.OK, None),
    ]


async def test_a_tool_that_is_not_idempotent_is_never_rerun(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    RUNS.clear()
    cut_off = assistant_message(
        "",
        [
            ToolCall("p", "pay", json.dumps({"name": "bob"})),
            ToolCall("w", "work", json.dumps({"name": "w"})),
        ],
    )
    saved = [user_message("go"), cut_off]
    journal = ListJournal()
    fake_llm.add(text("I could not tell whether bob was paid."))
    await run_turn(make_model(), SETTINGS, [], "go", TOOLS_WITH_PAY, journal=journal, resume=saved)
    assert RUNS == ["w"]  # pay is not run again
    assert "pay bob" not in RUNS
    assert journal.reruns == {"w"}
    results = tool_results(fake_llm.requests[0])
    assert json.loads(results["p"])["error"] == "Interrupted"
    assert set(results) == {"p", "w"}


async def test_resume_after_a_complete_round_asks_the_model_next(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    RUNS.clear()
    saved = [user_message("go"), round_of("a"), tool_message("a", "did a")]
    fake_llm.add(calls(("work", {"name": "b"}, "b")), text("ok"))
    result = await run_turn(make_model(), SETTINGS, [], "go", TOOLS, resume=saved)
    assert RUNS == ["b"]
    assert result.rounds == 3
    assert len(result.executions) == 1


async def test_resume_at_the_round_limit_goes_straight_to_the_answer(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    settings = LoopSettings(system_prompt="s", max_rounds=1)
    saved = [user_message("go"), round_of("a"), tool_message("a", "did a")]
    fake_llm.add(text("final"))
    result = await run_turn(make_model(), settings, [], "go", TOOLS, resume=saved)
    assert result.stop_reason is StopReason.ROUND_LIMIT
    assert fake_llm.requests[0]["tool_choice"] == "none"


def test_resume_from_orders_results_and_drops_strays() -> None:
    saved = [
        user_message("q"),
        round_of("a", "b"),
        tool_message("b", "B"),
        tool_message("zzz", "stray"),
        tool_message("a", "A"),
        round_of("c", "d"),
        tool_message("d", "D"),
    ]
    resumed = resume_from(saved)
    assert [m.get("tool_call_id") for m in resumed.messages] == [None, None, "a", "b", None]
    assert [c.id for c in resumed.open_calls] == ["c"]
    assert set(resumed.saved_results) == {"d"}
    assert resumed.rounds == 2


def test_an_incomplete_earlier_round_is_not_reopened() -> None:
    saved = [user_message("q"), round_of("a", "b"), tool_message("a", "A"), user_message("?")]
    resumed = resume_from(saved)
    assert resumed.open_calls == []
    assert [m["role"] for m in resumed.messages] == ["user", "assistant", "tool", "user"]


class BrokenJournal(ListJournal):
    """Saves the user message, then Redis is gone for good."""

    async def record(self, message: dict[str, Any]) -> None:
        if self.saved:
            raise ConnectionError("Redis is away")
        await super().record(message)


async def test_a_call_that_cannot_be_saved_never_runs(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    RUNS.clear()
    fake_llm.add(calls(("work", {"name": "a"}, "a")), text("never"))
    journal = BrokenJournal()
    with pytest.raises(ConnectionError):
        await run_turn(make_model(), SETTINGS, [], "go", TOOLS, journal=journal)
    assert RUNS == []  # the call was not saved, so it did not run
    assert [m["role"] for m in journal.saved] == ["user"]


async def test_a_deferred_call_parks_the_turn_and_runs_when_it_resumes(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    """A call that waits for a person parks the turn: the round's other calls run and are
    saved; the waiting one leaves a marker, no result. Resumed, it runs (even a tool that
    must not run twice: it never started), the others do not run again."""
    RUNS.clear()
    decided = False

    @tool(idempotent=False)
    async def transfer(amount: int) -> str:
        """Move money."""
        if not decided:
            raise CallDeferred("transfer", "waiting for approval")
        RUNS.append(f"transfer {amount}")
        return "moved"

    toolset = StaticToolset([work, transfer])
    journal = ListJournal()
    fake_llm.add(calls(("work", {"name": "look"}, "w1"), ("transfer", {"amount": 5}, "t1")))
    parked = await run_turn(make_model(), SETTINGS, [], "move 5", toolset, journal=journal)
    assert parked.stop_reason is StopReason.PARKED
    assert [(e.call_id, e.outcome) for e in parked.deferred] == [("t1", CallOutcome.DEFERRED)]
    assert [e.call_id for e in parked.executions] == ["w1"]  # only what ran
    roles = [m["role"] for m in journal.saved]
    assert roles[:2] == ["user", "assistant"] and sorted(roles[2:]) == ["deferred", "tool"]
    resumed = resume_from(journal.saved)
    assert [c.id for c in resumed.open_calls] == ["t1"] and resumed.deferred == {"t1"}
    assert all(m["role"] != "deferred" for m in resumed.messages)

    decided = True
    fake_llm.add(text("moved 5"))
    again = await run_turn(
        make_model(), SETTINGS, [], "move 5", toolset, journal=journal, resume=journal.saved
    )
    assert again.stop_reason is StopReason.ANSWERED and again.text == "moved 5"
    assert RUNS == ["look", "transfer 5"]  # nothing ran twice
    assert [e.call_id for e in again.executions] == ["t1"]
    sent = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert [m.get("tool_call_id") for m in sent[3:]] == ["w1", "t1"]  # in call order


async def test_a_stop_while_a_call_waits_gives_it_a_result(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    """A Stop during a round in which one call waits and another runs: nothing waits on, and
    every call of the round has a result in what is stored."""
    cancel = asyncio.Event()

    @tool
    async def wait_for_it() -> str:
        """Wait for a person."""
        raise CallDeferred("wait_for_it", "waiting")

    @tool
    async def slow() -> str:
        """Take a while."""
        cancel.set()  # the person presses Stop while this runs
        await asyncio.sleep(5)
        return "late"

    fake_llm.add(calls(("wait_for_it", {}, "x1"), ("slow", {}, "x2")))
    result = await run_turn(
        make_model(), SETTINGS, [], "go", StaticToolset([wait_for_it, slow]), cancel=cancel
    )
    assert result.stop_reason is StopReason.CANCELLED and result.deferred == []
    results = {m["tool_call_id"]: m for m in result.new_messages if m["role"] == "tool"}
    assert set(results) == {"x1", "x2"}
    assert {e.call_id: e.outcome for e in result.executions} == {
        "x1": CallOutcome.CANCELLED,
        "x2": CallOutcome.CANCELLED,
    }
