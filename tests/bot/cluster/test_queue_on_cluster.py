"""tests/bot/turn/store/test_queue.py on a Redis Cluster (see conftest.py)."""

from tests.bot.turn.store.test_queue import *  # noqa: F403
