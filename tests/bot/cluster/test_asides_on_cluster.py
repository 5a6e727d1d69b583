"""tests/bot/turn/store/test_asides.py on a Redis Cluster (see conftest.py)."""

from tests.bot.turn.store.test_asides import *  # noqa: F403
