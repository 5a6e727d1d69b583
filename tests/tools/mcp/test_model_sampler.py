"""ModelSampler with a fake model and fake usage counter and audit log (no network)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from tools.call_context import Requester
from tools.mcp.model_sampler import ModelSampler
from tools.mcp.sampling import SamplingReply, SamplingRequest

ANA = Requester("T1", "U1", "C1", "171.000001")
MESSAGES = [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "?"}]


@dataclass(frozen=True)
class FakeUsage:
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class FakeAnswer:
    text: str
    usage: FakeUsage
    model: str = ""
    finish_reason: str | None = "stop"


class ModelDown(Exception):
    """Fails like the bot's LLMError: with a short ``kind``."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"the model failed: {kind}")
        self.kind = kind


class FakeModel:
    model_name = "fake-model"

    def __init__(self, answer: FakeAnswer | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[list[dict[str, Any]], list[dict[str, Any]], int | None]] = []

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        *,
        max_tokens: int | None = None,
    ) -> FakeAnswer:
        self.calls.append((list(messages), list(tools), max_tokens))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class Books:
    """The usage counter and the audit log; either can be made to fail."""

    def __init__(self, count_fails: bool = False, audit_fails: bool = False) -> None:
        self.count_fails = count_fails
        self.audit_fails = audit_fails
        self.counted: list[tuple[Requester, FakeUsage]] = []
        self.audited: list[dict[str, Any]] = []

    async def count(self, who: Requester, usage: FakeUsage) -> None:
        if self.count_fails:
            raise ConnectionError("Redis is down")
        self.counted.append((who, usage))

    async def audit(self, **entry: Any) -> None:
        if self.audit_fails:
            raise ConnectionError("Redis is down")
        self.audited.append(entry)


def request(tool: str = "wh_ask_model", who: Requester = ANA) -> SamplingRequest:
    return SamplingRequest("warehouse", tool, who, MESSAGES, max_tokens=50)


def sampler(model: FakeModel, books: Books) -> ModelSampler[FakeUsage]:
    return ModelSampler(model, books.count, books.audit)


async def test_the_model_answers_capped_and_the_tokens_are_counted_and_audited() -> None:
    usage = FakeUsage(12, 1)
    model, books = FakeModel(FakeAnswer("White", usage, finish_reason="length")), Books()
    reply = await sampler(model, books).sample(request())
    assert model.calls == [(MESSAGES, [], 50)]  # no tools, the capped max_tokens
    assert reply == SamplingReply("White", "fake-model", stopped_at_limit=True)
    assert books.counted == [(ANA, usage)]
    assert books.audited == [
        {
            "kind": "sampling",
            "actor": "U1",
            "action": "wh_ask_model",
            "target": "mcp warehouse",
            "outcome": "ok",
            "detail": {
                "prompt_tokens": 12,
                "completion_tokens": 1,
                "max_tokens": 50,
                "model": "fake-model",  # the server named none: the configured model
                "channel": "C1",
                "thread": "171.000001",
            },
        }
    ]


async def test_the_served_model_is_named_and_a_request_outside_a_tool_or_thread() -> None:
    model = FakeModel(FakeAnswer("Blue", FakeUsage(3, 2), model="served-model"))
    books = Books()
    reply = await sampler(model, books).sample(request(tool="", who=Requester("T1", "U2")))
    assert reply == SamplingReply("Blue", "served-model", stopped_at_limit=False)
    [entry] = books.audited
    assert (entry["actor"], entry["action"], entry["outcome"]) == ("U2", "sampling", "ok")
    assert entry["detail"]["model"] == "served-model"
    assert (entry["detail"]["channel"], entry["detail"]["thread"]) == ("", "")


async def test_a_model_failure_is_audited_with_its_kind_and_raised() -> None:
    failure = ModelDown("timeout")
    model, books = FakeModel(failure), Books()
    with pytest.raises(ModelDown) as raised:
        await sampler(model, books).sample(request())
    assert raised.value is failure
    assert model.calls == [(MESSAGES, [], 50)]
    assert books.counted == []
    assert books.audited == [
        {
            "kind": "sampling",
            "actor": "U1",
            "action": "wh_ask_model",
            "target": "mcp warehouse",
            "outcome": "timeout",
            "detail": {"channel": "C1", "thread": "171.000001"},
        }
    ]


async def test_an_error_that_is_not_a_model_failure_is_raised_unaudited() -> None:
    books = Books()
    with pytest.raises(ValueError, match="a bug"):
        await sampler(FakeModel(ValueError("a bug")), books).sample(request())
    assert books.audited == [] and books.counted == []


async def test_a_failing_count_is_logged_and_the_request_is_still_audited_and_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="tools.mcp.model_sampler")
    books = Books(count_fails=True)
    reply = await sampler(FakeModel(FakeAnswer("White", FakeUsage(12, 1))), books).sample(request())
    assert reply.text == "White"
    assert [entry["outcome"] for entry in books.audited] == ["ok"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["could not count the tokens of a sampling request"]


async def test_a_failing_audit_is_logged_and_never_fails_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="tools.mcp.model_sampler")
    usage = FakeUsage(12, 1)
    books = Books(audit_fails=True)
    reply = await sampler(FakeModel(FakeAnswer("White", usage)), books).sample(request())
    assert reply.text == "White"
    assert books.counted == [(ANA, usage)]
    # A model failure is still the error raised, not the audit's.
    with pytest.raises(ModelDown):
        await sampler(FakeModel(ModelDown("rate_limited")), books).sample(request())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["could not audit a sampling request"] * 2
