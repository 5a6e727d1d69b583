"""tests/bot/state/test_policy_reads.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_policy_reads import *  # noqa: F403
