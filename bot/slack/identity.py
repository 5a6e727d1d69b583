"""Who the bot is in its workspace (auth.test), asked once per process.

Bolt asks ``auth.test`` itself on the first request it handles; when Slack is slow that
first request could miss its 3-second ack. So the process asks once at start and hands the
answer to Bolt's single-team authorization, and the turn views use the same answer to
recognise their own messages.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.authorization.async_single_team_authorization import (
    AsyncSingleTeamAuthorization,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Me:
    """Who the bot is (auth.test)."""

    user_id: str
    bot_id: str


WhoAmI = Callable[[], Awaitable[Me]]


class BotIdentity:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self.result: AsyncSlackResponse | None = None

    async def load(self) -> AsyncSlackResponse:
        if self.result is None:
            self.result = await self.client.auth_test()
        return self.result

    async def me(self) -> Me:
        result = await self.load()
        return Me(str(result.get("user_id") or ""), str(result.get("bot_id") or ""))

    def permalink(self, channel: str, ts: str, thread_ts: str = "") -> str:
        """A link to a message (the workspace's address from auth.test); the bare ts while
        it is not known yet."""
        url = str(self.result.get("url") or "") if self.result is not None else ""
        if not url:
            return f"{channel} {ts}"
        link = f"{url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
        if thread_ts and thread_ts != ts:
            link += f"?thread_ts={thread_ts}&cid={channel}"
        return link

    async def share_with(self, app: AsyncApp) -> None:
        """Ask now and give Bolt the answer, so no request waits for it. Best effort: if
        Slack cannot be asked now, Bolt asks on the first request as it always did."""
        try:
            result = await self.load()
        except Exception as exc:
            log.warning("auth.test failed at start (%s); Bolt will ask again", exc)
            return
        # Bolt keeps the answer in its authorization middleware and has no public setter.
        for middleware in getattr(app, "_async_middleware_list", ()):
            if isinstance(middleware, AsyncSingleTeamAuthorization):
                middleware.auth_test_result = result
