"""tests/bot/turn/store/test_history_budget.py on a Redis Cluster (see conftest.py)."""

from tests.bot.turn.store.test_history_budget import *  # noqa: F403
