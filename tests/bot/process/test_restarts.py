"""The restart backoff of a worker process that died (pure)."""

from __future__ import annotations

from bot.process.restarts import RestartBackoff


def test_a_process_that_keeps_dying_young_waits_longer_each_time_up_to_the_cap() -> None:
    backoff = RestartBackoff(first_s=0.5, max_s=30.0, steady_s=30.0)
    delays = [backoff.after_exit(ran_for_s=0.2) for _ in range(9)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_a_steady_run_starts_the_backoff_again() -> None:
    backoff = RestartBackoff(first_s=0.5, max_s=30.0, steady_s=30.0)
    assert [backoff.after_exit(1.0) for _ in range(3)] == [0.5, 1.0, 2.0]
    assert backoff.after_exit(ran_for_s=30.0) == 0.5  # it had started well
    assert backoff.after_exit(ran_for_s=29.9) == 1.0  # and this one died young again


def test_the_defaults() -> None:
    backoff = RestartBackoff()
    assert backoff.after_exit(3600.0) == 0.5
    assert max(backoff.after_exit(0.0) for _ in range(20)) == 30.0
