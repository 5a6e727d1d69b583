"""tests/bot/turn/store/test_records.py on a Redis Cluster (see conftest.py)."""

from tests.bot.turn.store.test_records import *  # noqa: F403
