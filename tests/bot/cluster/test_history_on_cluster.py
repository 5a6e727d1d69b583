"""tests/bot/state/test_history.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_history import *  # noqa: F403
