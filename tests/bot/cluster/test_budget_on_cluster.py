"""test_end_to_end's scenarios on a Redis Cluster (see conftest.py)."""

from tests.bot.budget.test_end_to_end import (
    test_agent_usage_shows_spend_against_each_limit,
    test_mcp_sampling_counts_against_the_persons_limits,
    test_over_the_limit_the_plain_answer_and_no_model_call,
    test_the_limit_resets_when_the_day_changes,
)

__all__ = [
    "test_agent_usage_shows_spend_against_each_limit",
    "test_mcp_sampling_counts_against_the_persons_limits",
    "test_over_the_limit_the_plain_answer_and_no_model_call",
    "test_the_limit_resets_when_the_day_changes",
]
