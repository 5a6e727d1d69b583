"""One aiohttp session for every Web API call of a process, its connections kept alive.

Without one, slack_sdk opens a session, a TCP connection (and a TLS handshake) for each
call and closes them after. The shared session sets no limit on connections at once (as
many as calls, as before) and limits each call's total time as slack_sdk's own would.
"""

from __future__ import annotations

import aiohttp

# Idle connections are closed after this long, well before Slack's side drops them
# (its load balancers keep an idle connection 60 s).
KEEPALIVE_S = 30.0


def shared_session(timeout_s: float) -> aiohttp.ClientSession:
    """A session for the running event loop."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S),
        timeout=aiohttp.ClientTimeout(total=timeout_s),
    )
