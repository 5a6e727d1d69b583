"""tests/bot/state/test_budget.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_budget import *  # noqa: F403
