from __future__ import annotations

from bot.llm.tokens import TokenEstimator


def test_counts_content_and_tool_calls() -> None:
    estimator = TokenEstimator()
    message = {
        "role": "assistant",
        "content": "abcd" * 10,
        "tool_calls": [{"id": "1", "function": {"name": "abcd", "arguments": "abcd" * 4}}],
    }
    assert estimator.tokens([message]) == 10 + 1 + 4 + 4


def test_observations_move_the_ratio_within_bounds() -> None:
    estimator = TokenEstimator()
    messages = [{"role": "user", "content": "x" * 3000}]
    estimator.observe(messages, prompt_tokens=1004)  # 3 characters a token
    assert 3.0 < estimator.chars_per_token < 4.0
    for _ in range(30):
        estimator.observe(messages, prompt_tokens=10)  # absurd: capped at 8 characters a token
    assert estimator.chars_per_token <= 8.0
    before = estimator.chars_per_token
    estimator.observe([{"role": "user", "content": "short"}], prompt_tokens=3)
    assert estimator.chars_per_token == before  # too small a sample to learn from
