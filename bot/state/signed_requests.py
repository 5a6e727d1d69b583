"""Slash commands and interactions already accepted, by their Slack signature: a captured
request sent again while its signature is still valid is refused.

Slack signs each request with HMAC-SHA256 over ``v0:<timestamp>:<body>`` and a request is
valid within five minutes of its timestamp, either way (slack_sdk's ``SignatureVerifier``).
So a captured request (a proxy's log, a browser extension, a copied curl) can be sent again
for up to five minutes: a ``/agent grant`` replayed after a revoke grants again. Each
accepted request's (timestamp, signature) is remembered with ``SET NX`` for as long as the
signature would be accepted, with a margin for the clocks of the replicas; a second arrival
finds it there. One key per request in the shard of its signature: one round trip on the ack
path, and nothing to merge.

Events (the Events API) are not kept here: Slack retries them with the same event, and the
queue's enqueue refuses what it has seen (bot/turn/store/queue.py).
"""

from __future__ import annotations

import time

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication

VALID_S = 300  # how far from now Slack's signature may be dated, either way
MARGIN_S = 60  # the replicas' clocks may differ from the one that remembers


def kept_for(timestamp: str, now: float) -> int:
    """Seconds to remember a request signed at ``timestamp`` (pure): until a signature of
    that time is refused everywhere, at least the margin, at most the whole window."""
    longest = 2 * VALID_S + MARGIN_S
    try:
        left = int(timestamp) + VALID_S + MARGIN_S - now
    except ValueError:
        return longest
    return int(min(max(left, MARGIN_S), longest))


class SignedRequests:
    def __init__(self, client: Redis, keys: Keys, replication: Replication | None = None) -> None:
        self.client = client
        self.keys = keys
        # Remembered before the request is acted on: on replicas, where they must confirm.
        self.replication = replication or Replication()

    async def first_time(self, timestamp: str, signature: str) -> bool:
        """Remember the request now; False when it was accepted before (a replay). Raises
        what redis-py raises when Redis cannot be asked, and NotReplicated: the caller
        refuses then."""
        key = self.keys.signed_request(timestamp, signature)
        ttl = kept_for(timestamp, time.time())
        if not self.replication.on:
            return bool(await self.client.set(key, "1", nx=True, ex=ttl))
        [reply] = await self.replication.pipeline(
            self.client, lambda pipe: pipe.set(key, "1", nx=True, ex=ttl)
        )
        if isinstance(reply, BaseException):
            raise reply
        return bool(reply)
