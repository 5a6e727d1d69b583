"""tests/bot/turn/store/test_history.py on a Redis Cluster (see conftest.py)."""

from tests.bot.turn.store.test_history import *  # noqa: F403
