"""The delivery record: two small state machines written only through their moves, a
stored form that earlier versions read and wrote, saved through the owner's fence one save
at a time; and the one way the turn's first message is found in its thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from bot.slack.outbound.delivery import (
    CONTROL_MOVES,
    MESSAGE_MOVES,
    ControlState,
    IllegalDeliveryMove,
    MessageState,
    SlackDelivery,
)
from bot.slack.outbound.ledger import DeliveryLedger
from bot.slack.outbound.tagging import FirstMessage, OwnMessage, first_message
from tests.fakes.deadline import NoDeadline


class SlowFence(NoDeadline):
    """Each save takes the next delay from ``delays``; keeps what Redis would hold last."""

    def __init__(self, *delays: float) -> None:
        self.delays = list(delays)
        self.stored: dict[str, Any] = {}
        self.started = asyncio.Event()

    def valid(self) -> bool:
        return True

    async def save_delivery(self, record: dict[str, Any]) -> None:
        self.started.set()
        await asyncio.sleep(self.delays.pop(0) if self.delays else 0.0)
        self.stored = dict(record)


async def test_a_slow_older_save_never_lands_over_a_newer_one() -> None:
    # The Stop button's message marks itself as posting; its save is slow (a new Redis
    # connection). Meanwhile the stream marks its start as posting and starts: if the older
    # picture landed last, the stream's start would be forgotten and never found again.
    fence = SlowFence(0.2, 0.0)
    ledger = DeliveryLedger(SlackDelivery(), fence)
    ledger.record.control_posting()
    control = asyncio.create_task(ledger.save())
    await fence.started.wait()
    ledger.record.posting()
    await ledger.save()
    await control
    assert fence.stored["first_posting"] is True
    assert fence.stored["control_posting"] is True


# --- the state machines ------------------------------------------------------------------


def record_in(state: MessageState) -> SlackDelivery:
    return SlackDelivery(message=state, ts="" if state in (NONE, POSTING) else "9.9")


NONE, POSTING, STREAMING, POSTED, STOPPED, FINISHED = (
    MessageState.NONE,
    MessageState.POSTING,
    MessageState.STREAMING,
    MessageState.POSTED,
    MessageState.STOPPED,
    MessageState.FINISHED,
)


def test_the_turns_message_moves_only_as_its_table_allows() -> None:
    moves: dict[str, Callable[[SlackDelivery], object]] = {
        "posting": lambda r: r.posting(),
        "created stream": lambda r: r.created("1.1", streaming=True),
        "created post": lambda r: r.created("1.1", streaming=False),
        "found nothing": lambda r: r.found("", streaming=False),
        "gone": lambda r: r.gone(),
        "finished": lambda r: r.finished("1.1"),
    }
    targets = {
        "posting": POSTING,
        "created stream": STREAMING,
        "created post": POSTED,
        "found nothing": NONE,
        "gone": NONE,
        "finished": FINISHED,
    }
    for state in MessageState:
        for name, move in moves.items():
            record = record_in(state)
            target = targets[name]
            if target is state or target in MESSAGE_MOVES[state]:
                move(record)
                assert record.message is target, (state, name)
            else:
                with pytest.raises(IllegalDeliveryMove):
                    move(record)
                assert record.message is state  # a refused move changes nothing


def test_only_a_stream_can_be_stopped_by_the_person_and_it_stays_stopped() -> None:
    for state in MessageState:
        record = record_in(state)
        left = record.user_stopped()
        assert left == (state in (STREAMING, STOPPED)), state
        assert record.stopped == left
    stopped = record_in(STREAMING)
    stopped.user_stopped()
    stopped.stream_over()  # never "posted" again: it is not written to
    assert stopped.message is STOPPED and stopped.open_stream == ""
    with pytest.raises(IllegalDeliveryMove):
        stopped.posting()
    stopped.finished("9.9")  # left as it is, it is the answer's first part
    assert stopped.part_ts(0) == "9.9"


def test_the_stop_buttons_message_moves_only_as_its_table_allows() -> None:
    record = SlackDelivery()
    with pytest.raises(IllegalDeliveryMove):
        record.control_shown("1.1")  # never shown without being posted
    record.control_posting()
    record.control_not_found()
    record.control_posting()
    record.control_shown("1.2")
    with pytest.raises(IllegalDeliveryMove):
        record.control_posting()  # one message, posted once
    record.control_closed()
    assert (record.control, record.control_ts) == (ControlState.CLOSED, "1.2")
    assert set(CONTROL_MOVES[ControlState.CLOSED]) == set()


def test_the_stored_form_is_the_one_earlier_versions_read_and_wrote() -> None:
    # Each state written and read back; and each as an earlier version stored it.
    earlier: dict[MessageState, dict[str, object]] = {
        NONE: {},
        POSTING: {"first_posting": True},
        STREAMING: {"first_ts": "9.9", "first_streaming": True},
        POSTED: {"first_ts": "9.9"},
        STOPPED: {"first_ts": "9.9", "first_streaming": False, "stopped_by_user": True},
        FINISHED: {"first_ts": "9.9", "parts": {"0": "9.9"}},
    }
    for state, stored in earlier.items():
        record = record_in(state)
        if state is FINISHED:
            record.parts["0"] = "9.9"
        assert SlackDelivery.from_record(record.to_record()) == record
        assert SlackDelivery.from_record(stored).message is state
    control = SlackDelivery.from_record({"control_posting": True, "parts": [], "tasks": {}})
    assert control.control is ControlState.POSTING
    assert control.parts == {} and control.tasks == []  # cjson's empty {} and [] alike
    closed = SlackDelivery.from_record({"control_ts": "1.2", "control_closed": True})
    assert (closed.control, closed.control_ts) == (ControlState.CLOSED, "1.2")


def test_the_turns_first_message_is_found_one_way() -> None:
    def own(ts: str, kind: str | None, part: int | None = None) -> OwnMessage:
        payload = None if kind is None else {"message": "5.0", "kind": kind, "part": part}
        return OwnMessage(ts, payload)

    assert first_message([], "5.0") == FirstMessage()
    control, stream = own("6.0", "control"), own("6.1", None)
    assert first_message([control, stream], "5.0") == FirstMessage("6.1", streaming=True)
    tagged = own("6.2", "answer", 0)
    assert first_message([control, stream, tagged], "5.0") == FirstMessage("6.2")
    assert first_message([own("6.3", "answer", 1)], "5.0") == FirstMessage()
