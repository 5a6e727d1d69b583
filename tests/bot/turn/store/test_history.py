"""Per-thread history in the real Redis: whole turns, caps, idle expiry refreshed on use."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from bot.llm.tokens import TokenEstimator
from bot.process.state import State
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.history import UNDELIVERED, StoredTurn
from permissions.withholding import arguments_note, note, requester_scope
from tools import StaticToolset

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

THREAD = ThreadKey("T1", "C1", "1700000000.000100")


def turn(n: int, size: int = 10) -> list[dict[str, object]]:
    return [
        {"role": "user", "content": f"q{n} " + "x" * size},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": f"c{n}", "content": "r"},
        {"role": "assistant", "content": f"a{n}"},
    ]


async def everything(turns: Sequence[StoredTurn]) -> list[list[dict[str, Any]]]:
    return [list(t.messages) for t in turns]


async def test_turns_are_stored_whole_and_in_order(state: State) -> None:
    await state.threads.history.append(THREAD, turn(1), user="U1")
    await state.threads.history.append(THREAD, turn(2), user="U1")
    turns = await state.threads.history.load_turns(THREAD)
    assert turns == [turn(1), turn(2)]
    other = ThreadKey("T1", "C1", "1700000000.000200")
    assert await state.threads.history.load_turns(other) == []


async def test_concurrent_appends_never_interleave(state: State) -> None:
    await asyncio.gather(
        *(state.threads.history.append(THREAD, turn(n), user="U1") for n in range(30))
    )
    turns = await state.threads.history.load_turns(THREAD)
    assert len(turns) == 30
    assert all(len(t) == 4 and t[1]["tool_calls"][0]["id"] == t[2]["tool_call_id"] for t in turns)


async def test_caps_drop_the_oldest_turns_but_never_the_newest(
    make_state: Callable[..., State],
) -> None:
    capped = make_state(history={"max_turns": 3, "max_bytes": 10_000})
    for n in range(5):
        await capped.threads.history.append(THREAD, turn(n), user="U1")
    assert [t[0]["content"][:2] for t in await capped.threads.history.load_turns(THREAD)] == [
        "q2",
        "q3",
        "q4",
    ]
    # The byte cap: a turn bigger than the cap on its own is still kept, alone.
    await capped.threads.history.append(THREAD, turn(9, size=20_000), user="U1")
    kept = await capped.threads.history.load_turns(THREAD)
    assert len(kept) == 1 and kept[0][0]["content"].startswith("q9")
    stored = await capped.client.get(capped.keys.history_bytes(THREAD))
    [entry] = await capped.client.lrange(capped.keys.history(THREAD), 0, -1)
    assert int(stored) == len(entry.encode())
    assert json.loads(entry)["messages"] == turn(9, size=20_000)


async def test_idle_expiry_is_set_and_refreshed_on_use(state: State) -> None:
    await state.threads.history.append(THREAD, turn(1), user="U1")
    key = state.keys.history(THREAD)
    week = 7 * 24 * 3600
    assert week - 5 <= await state.client.ttl(key) <= week
    await state.client.expire(key, 30)
    await state.client.expire(state.keys.history_bytes(THREAD), 30)
    await state.threads.history.load_turns(THREAD)  # reading counts as use
    assert await state.client.ttl(key) > week - 5
    assert await state.client.ttl(state.keys.history_bytes(THREAD)) > week - 5


async def test_for_model_trims_whole_turns_to_the_budget(state: State) -> None:
    for n in range(10):
        await state.threads.history.append(THREAD, turn(n, size=400), user="U1")
    estimator = TokenEstimator()
    one_turn = estimator.tokens(turn(0, size=400))
    messages = await state.threads.history.for_model(THREAD, one_turn * 3, estimator, everything)
    assert len(messages) == 12  # three whole turns
    assert messages[0]["content"].startswith("q7")
    assert messages[-1]["content"] == "a9"


async def test_an_unreadable_turn_is_skipped(state: State) -> None:
    await state.threads.history.append(THREAD, turn(1), user="U1")
    await state.client.rpush(state.keys.history(THREAD), "{not json")
    assert await state.threads.history.load_turns(THREAD) == [turn(1)]


async def test_an_answer_the_person_never_saw_is_not_shown_as_said(state: State) -> None:
    await state.threads.history.append(THREAD, turn(1), user="U1", turn="e1", delivered=False)
    await state.threads.history.append(THREAD, turn(2), user="U1", turn="e2")
    # A turn given up before it had an answer: only the question and a finished round.
    await state.threads.history.append(THREAD, turn(3)[:3], user="U1", turn="e3", delivered=False)
    first, second, third = await state.threads.history.load_turns(THREAD)
    assert first[:-1] == turn(1)[:-1]
    assert first[-1] == {"role": "assistant", "content": UNDELIVERED}
    assert second == turn(2)
    assert third == [*turn(3)[:3], {"role": "assistant", "content": UNDELIVERED}]
    # A turn stored before the delivered mark existed reads as it was.
    await state.client.rpush(state.keys.history(THREAD), json.dumps(turn(4)))
    assert (await state.threads.history.load_turns(THREAD))[-1] == turn(4)


async def test_who_asked_is_stored_and_read_back(state: State) -> None:
    await state.threads.history.append(THREAD, turn(1), user="U0ADMIN", turn="e1")
    await state.threads.history.append(THREAD, turn(2), user="U0ALICE", turn="e2", delivered=False)
    [raw, _] = await state.client.lrange(state.keys.history(THREAD), 0, -1)
    assert json.loads(raw) == {
        "turn": "e1",
        "delivered": True,
        "user": "U0ADMIN",
        "messages": turn(1),
    }
    first, second = await state.threads.history.stored_turns(THREAD)
    assert first == StoredTurn(turn(1), "U0ADMIN")
    assert (second.user, second.messages[-1]["content"]) == ("U0ALICE", UNDELIVERED)


async def test_turns_stored_before_the_requester_was_kept_still_load(state: State) -> None:
    old = {"turn": "e0", "delivered": True, "messages": turn(0)}  # the format before
    await state.client.rpush(state.keys.history(THREAD), json.dumps(old), json.dumps(turn(1)))
    await state.threads.history.append(THREAD, turn(2), user="U0ALICE")
    stored = await state.threads.history.stored_turns(THREAD)
    assert stored == [StoredTurn(turn(0)), StoredTurn(turn(1)), StoredTurn(turn(2), "U0ALICE")]
    assert await state.threads.history.load_turns(THREAD) == [turn(0), turn(1), turn(2)]


async def test_for_model_shows_the_thread_as_its_requester_may_see_it(state: State) -> None:
    await state.client.rpush(state.keys.history(THREAD), json.dumps(turn(0)))  # nobody's own
    await state.threads.history.append(THREAD, turn(1), user="U0ADMIN")
    await state.threads.history.append(THREAD, turn(2), user="U0ALICE")
    nothing_usable = StaticToolset([])  # "f" is not a tool either of them may use
    estimator = TokenEstimator()
    alice = await state.threads.history.for_model(
        THREAD, 10_000, estimator, requester_scope("U0ALICE", nothing_usable)
    )
    assert [m["content"] for m in alice if m["role"] == "tool"] == [note("f"), note("f"), "r"]
    # The calls' arguments are withheld with their results; the text stays.
    assert [m.get("content") for m in alice if m["role"] != "tool"] == [
        m.get("content") for n in range(3) for m in turn(n) if m["role"] != "tool"
    ]
    assert [c["function"]["arguments"] for m in alice for c in m.get("tool_calls") or ()] == [
        arguments_note("f", restricted=True),
        arguments_note("f", restricted=True),
        "{}",
    ]
    admin = await state.threads.history.for_model(
        THREAD, 10_000, estimator, requester_scope("U0ADMIN", nothing_usable)
    )
    assert [m["content"] for m in admin if m["role"] == "tool"] == [note("f"), "r", note("f")]
