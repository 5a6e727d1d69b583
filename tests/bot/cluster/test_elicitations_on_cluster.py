"""tests/bot/turn/store/test_elicitations.py on a Redis Cluster (see conftest.py)."""

from tests.bot.turn.store.test_elicitations import *  # noqa: F403
