"""tests/bot/state/test_elicitations.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_elicitations import *  # noqa: F403
