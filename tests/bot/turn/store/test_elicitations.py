"""Questions in Redis: answered once, only while open; a late answer is found at closing."""

from __future__ import annotations

import pytest

from bot.process.state import State
from bot.turn.store.elicitations import OpenQuestion
from tools.questions import Answer

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


def open_question(question_id: str) -> OpenQuestion:
    return OpenQuestion(question_id, "T1", "C1", "100.1", "U1", "Asks: ok?", {"type": "object"})


async def test_the_first_answer_wins_and_the_waiter_gets_it(state: State) -> None:
    questions = state.threads.elicitations
    opened = await questions.open(open_question("q1"), timeout_s=30)
    opened = await questions.posted(opened, "200.2")
    assert (await questions.get("q1")) == opened and opened.message_ts == "200.2"
    assert await questions.answer(opened, Answer("accept", {"a": 1}))
    assert not await questions.answer(opened, Answer("decline"))
    assert await questions.wait("q1", 5) == Answer("accept", {"a": 1})


async def test_a_closed_question_takes_no_answer(state: State) -> None:
    questions = state.threads.elicitations
    opened = await questions.open(open_question("q2"), timeout_s=30)
    assert await questions.close("q2") is None
    assert await questions.get("q2") is None
    assert not await questions.answer(opened, Answer("accept", {}))


async def test_an_answer_just_before_closing_is_not_lost(state: State) -> None:
    questions = state.threads.elicitations
    opened = await questions.open(open_question("q3"), timeout_s=1)
    assert await questions.answer(opened, Answer("decline"))
    assert await questions.close("q3") == Answer("decline")
