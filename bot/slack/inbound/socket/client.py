"""slack_sdk's aiohttp Socket Mode client, with two decisions handed to its pool.

- A ``disconnect`` message: the SDK closes the connection and only then opens a new one; the
  pool instead opens the new connection first (``on_disconnect``).
- ``apps.connections.open`` refused for good (``invalid_auth``, a revoked token...): the SDK
  logs and retries every ping interval forever; this client stops (``on_refused``) and the
  pool decides when to try again.

Everything else (pings, reconnecting a dropped connection, dispatching envelopes to Bolt)
is the SDK's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.inbound.socket.refusals import is_refusal

log = logging.getLogger(__name__)


class PooledClient(SocketModeClient):
    def __init__(
        self,
        app_token: str,
        web_client: AsyncWebClient,
        *,
        ping_interval: float,
        on_disconnect: Callable[[PooledClient, str], None],
        on_refused: Callable[[PooledClient, str], None],
        logger: logging.Logger,
    ) -> None:
        super().__init__(
            app_token=app_token, web_client=web_client, ping_interval=ping_interval, logger=logger
        )
        self.on_disconnect = on_disconnect
        self.on_refused = on_refused

    async def issue_new_wss_url(self) -> str:
        try:
            response = await self.web_client.apps_connections_open(app_token=self.app_token)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if is_refusal(error):
                # Stop the SDK's connect loop quietly: it returns when the client is closed.
                self.closed = True
                self.auto_reconnect_enabled = False
                self.on_refused(self, error)
            raise
        return str(response["url"])

    async def run_message_listeners(self, message: dict[str, Any], raw_message: str) -> None:
        if message.get("type") == "disconnect":
            self.on_disconnect(self, str(message.get("reason") or ""))
            return
        await super().run_message_listeners(message, raw_message)
