"""tests/bot/state/test_admin_storage.py on a Redis Cluster (see conftest.py)."""

from tests.bot.state.test_admin_storage import *  # noqa: F403

# Counts round trips to one Redis; a cluster's report takes one per shard.
del test_the_usage_report_is_one_round_trip  # noqa: F821
