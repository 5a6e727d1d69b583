"""tests/bot/budget/test_ledger.py on a Redis Cluster (see conftest.py)."""

from tests.bot.budget.test_ledger import *  # noqa: F403
