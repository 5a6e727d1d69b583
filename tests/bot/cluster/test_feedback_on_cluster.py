"""tests/bot/state/test_feedback.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_feedback import *  # noqa: F403
