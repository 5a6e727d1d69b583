"""What shows that the bot is working on a turn: Slack's agent session where the workspace
offers it (status "processing", Slack's own stop button; back to "active" at the end), or
else the assistant thread status with its loading messages.

Whether agent sessions work is learnt from Slack's answers, per team, and remembered for a
while, so a workspace without them costs one refused call now and then, not one a turn.
"""

from __future__ import annotations

import asyncio
import logging
import time

from slack_sdk.web.async_client import AsyncWebClient

from bot.config.schema import SlackConfig
from bot.slack.calls import safe_call
from bot.slack.errors import error_code, is_temporary
from bot.turn.model import Turn

log = logging.getLogger(__name__)

ASK_AGAIN_S = 600.0  # a team without agent sessions is asked again after this long
TITLE_CHARS = 60
STATUS_REFRESH_S = 90.0  # Slack drops an assistant status after two minutes without a reply


class SessionSupport:
    """Per team: may agent sessions be used now? (one per process)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._off_until: dict[str, float] = {}

    def usable(self, team: str) -> bool:
        return self.enabled and time.monotonic() >= self._off_until.get(team, 0.0)

    def unavailable(self, team: str) -> None:
        self._off_until[team] = time.monotonic() + ASK_AGAIN_S


class TurnStatus:
    def __init__(
        self,
        client: AsyncWebClient,
        turn: Turn,
        settings: SlackConfig,
        support: SessionSupport,
        *,
        title_thread: bool,
    ) -> None:
        self.client = client
        self.turn = turn
        self.settings = settings
        self.support = support
        self.title_thread = title_thread  # a new agent-pane thread: name it after the question
        self.sessions = False  # Slack's agent session shows the status and a stop button
        # A session call failed for now: the session may show "processing" all the same
        # (an earlier attempt of the turn set it, or the failed call was applied), so the
        # end sets it back to "active" too.
        self.unsure = False
        self.shown = False  # the assistant status is shown
        self.ready = asyncio.Event()
        self._status_at = 0.0

    @property
    def title(self) -> str:
        return " ".join(self.turn.text.split())[:TITLE_CHARS]

    async def start(self) -> None:
        """The turn's first Slack call: the session goes to "processing", or else the
        assistant status shows (and, for a new agent-pane thread, its title is set)."""
        try:
            if await self._session("processing", title=self.title):
                self.sessions = True
                return
            await self._assistant_status(self.settings.status_text)
            if self.title_thread:
                await safe_call(
                    self.client.assistant_threads_setTitle,
                    channel_id=self.turn.channel,
                    thread_ts=self.turn.thread_ts,
                    title=self.title,
                )
        finally:
            self.ready.set()

    async def working_on(self, tool: str) -> None:
        """A long turn keeps its assistant status (Slack drops it after two minutes)."""
        if not self.shown:
            return
        now = time.monotonic()
        if now - self._status_at > STATUS_REFRESH_S:
            await self._assistant_status(f"is running {tool}…")

    async def end(self) -> None:
        """The session goes back to "active" (when the answer did not do it already)."""
        if self.sessions or self.unsure:
            await self._session("active")

    async def _session(self, status: str, title: str | None = None) -> bool:
        team = self.turn.team
        if not self.support.usable(team):
            return False
        try:
            await self.client.agents_sessions_setStatus(
                channel_id=self.turn.channel,
                thread_ts=self.turn.thread_ts,
                status=status,
                title=title,
                initiator_user_id=self.turn.user or None,
            )
            return True
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_temporary(exc):
                self.unsure = True
            else:
                self.support.unavailable(team)
                log.info(
                    "agent sessions are not available to team %s (%s); using the assistant "
                    "status and a Stop button",
                    team,
                    error_code(exc),
                )
            return False

    async def _assistant_status(self, status: str) -> None:
        response = await safe_call(
            self.client.assistant_threads_setStatus,
            channel_id=self.turn.channel,
            thread_ts=self.turn.thread_ts,
            status=status,
            loading_messages=self.settings.loading_messages or None,
        )
        self.shown = response is not None
        self._status_at = time.monotonic()
