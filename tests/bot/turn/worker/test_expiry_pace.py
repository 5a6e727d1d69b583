"""How often a worker looks for approval requests to expire (pure): often enough that a
request opened just after one look is found before its deadline, and no more than that."""

from __future__ import annotations

import pytest

from bot.turn.worker.consumer import EXPIRY_EVERY_MAX_S, EXPIRY_MIN_WAIT_S, expiry_every


@pytest.mark.parametrize(
    ("timeout_s", "every_s"),
    [(900.0, EXPIRY_EVERY_MAX_S), (30.0, 30.0), (5.0, 5.0), (3.0, 3.0), (0.01, EXPIRY_MIN_WAIT_S)],
)
def test_looks_are_never_further_apart_than_a_request_stays_open(
    timeout_s: float, every_s: float
) -> None:
    assert expiry_every(timeout_s) == every_s
    # A request opened just after a look is due timeout_s later: the next look finds it
    # by then (and the worker looks again at its deadline).
    assert expiry_every(timeout_s) <= max(timeout_s, EXPIRY_MIN_WAIT_S)
