"""benchmarks/schedules.py with tiny sizes on the test Redis: it runs to its table, its
counts are the ones the scheduler's test counts (an idle tick one round trip, a fired run
four, its outcome one), each run of a burst fired by two schedulers is queued once, and it
leaves no key behind."""

from __future__ import annotations

from benchmarks.schedules import REDIS_URL, Sizes, measure, table
from bot.process.state import State


async def test_the_benchmark_counts_and_cleans_up(key_prefix: str, state: State) -> None:
    sizes = Sizes(ticks=5, stored=(0, 3), spaced=1, runs=3, burst=4, lead_s=1.0)
    figures = await measure(REDIS_URL, key_prefix, sizes)

    assert [cost.round_trips for cost in figures.idle.values()] == [1.0, 1.0]
    assert figures.spaced.round_trips == 1.0
    assert figures.fired.round_trips == 4.0
    assert figures.outcome.round_trips == 1.0
    assert all(cost.wire_bytes > 0 and cost.cpu_us > 0 for cost in figures.idle.values())
    assert [b.label for b in figures.bursts] == ["same phase", "half a tick apart"]
    for burst in figures.bursts:
        assert (burst.queued, burst.extra, burst.fired) == (4, 0, 4), burst
        assert 0 <= burst.all_queued_s < 5.0, burst  # the bound for a run

    lines = table(figures)
    assert lines[1].startswith("idle tick, 0 schedules (5 ticks)")
    assert any(line.startswith("fired run (3 runs)") for line in lines)
    assert any(line.startswith("half a tick apart") for line in lines)
    assert [key async for key in state.client.scan_iter(match=f"{key_prefix}*")] == []
