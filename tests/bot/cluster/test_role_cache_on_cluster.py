"""tests/bot/state/test_role_cache.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_role_cache import *  # noqa: F403
