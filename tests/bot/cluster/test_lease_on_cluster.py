"""tests/bot/turn/store/test_lease.py on a Redis Cluster (see conftest.py)."""

from tests.bot.turn.store.test_lease import *  # noqa: F403

# These pause a private single Redis (SIGSTOP) to hang renewals: not a cluster's business.
del test_a_lease_whose_renewal_hangs_is_lost_on_time  # noqa: F821
del test_a_call_running_while_renewals_hang_is_cut_off_on_time  # noqa: F821
