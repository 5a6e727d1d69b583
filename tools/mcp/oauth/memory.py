"""``MemoryTokens``: one person's token for one server kept in this process's memory, as a
``PersonTokens`` (the bot's own lives in Redis, shared by every process).

For a process that connects on its own and keeps nothing: the MCP conformance driver, checks
that must not write anything, tests. It refreshes through ``grants.refresh_grant`` one caller
at a time, with the same rules as the bot's: a token with less than ``margin_s`` of life is
refreshed first, a refused refresh forgets the token.
"""

from __future__ import annotations

import asyncio
import time

from tools.mcp.oauth.grants import refresh_grant
from tools.mcp.oauth.tokens import (
    Freshness,
    Gone,
    Held,
    Refreshed,
    RefreshUnavailable,
    TokenSnapshot,
    Unavailable,
)

MARGIN_S = 10.0


class MemoryTokens:
    def __init__(
        self,
        snapshot: TokenSnapshot | None = None,
        *,
        server_url: str | None = None,
        margin_s: float = MARGIN_S,
    ) -> None:
        """``server_url``: the MCP server's, for a refresh where it published no resource
        metadata."""
        self.snapshot = snapshot
        self.ver = 0 if snapshot is None else 1
        self.server_url = server_url
        self.margin_s = margin_s
        self.refreshes = 0  # refresh requests made
        self._lock = asyncio.Lock()

    def keep(self, snapshot: TokenSnapshot) -> Held:
        """A new token (a sign-in finished): the next version."""
        self.snapshot = snapshot
        self.ver += 1
        return Held(self.ver, snapshot)

    def forget(self) -> None:
        self.snapshot = None

    def _fresh_enough(self, snapshot: TokenSnapshot) -> bool:
        if snapshot.expires_at is None:
            return True
        return snapshot.expires_at - time.time() >= self.margin_s

    async def fresh(self, *, after_401_of: int | None = None) -> Freshness:
        async with self._lock:
            snapshot = self.snapshot
            if snapshot is None:
                return Gone()
            if after_401_of != self.ver and self._fresh_enough(snapshot):
                return Held(self.ver, snapshot)
            self.refreshes += 1
            outcome = await refresh_grant(snapshot, server_url=self.server_url)
            if isinstance(outcome, Refreshed):
                return self.keep(outcome.snapshot)
            if isinstance(outcome, RefreshUnavailable):
                return Unavailable(outcome.reason)
            self.forget()
            return Gone()
