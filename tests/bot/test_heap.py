"""Start-up's objects frozen out of the collector's scans; what comes after is collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bot.process.heap import freeze_start_up


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def frozen() -> Iterator[int]:
    thresholds = gc.get_threshold()
    try:
        yield freeze_start_up()
    finally:
        gc.unfreeze()  # this test process goes on as before
        gc.set_threshold(*thresholds)


def test_start_up_is_frozen_and_later_cycles_are_still_collected(frozen: int) -> None:
    assert frozen > 1000 and gc.get_freeze_count() > 1000
    assert gc.get_threshold() == (10_000, 10, 10)
    first, second = Node(), Node()
    first.other, second.other = second, first  # a cycle: only the collector frees it
    gone = weakref.ref(first)
    del first, second
    gc.collect()
    assert gone() is None


def test_start_up_garbage_is_collected_before_freezing() -> None:
    first, second = Node(), Node()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    del first, second
    thresholds = gc.get_threshold()
    try:
        freeze_start_up()
        assert gone() is None  # not kept forever in the permanent generation
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
