"""tests/bot/state/test_asides.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_asides import *  # noqa: F403
