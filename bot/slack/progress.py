"""What the person sees while a turn runs: the assistant status at once, and one threaded
progress message listing each tool as running, done in N ms, or failed."""

from __future__ import annotations

import asyncio
import json
import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.events import ToolFinished, ToolStarted
from bot.slack.blocks import ToolLine, progress_blocks, progress_text
from bot.slack.calls import safe_call
from bot.slack.coalesced import CoalescedMessage
from bot.turn import Turn

log = logging.getLogger(__name__)

STATUS_REFRESH_S = 90.0  # Slack drops a status after two minutes without a reply


class ProgressView:
    def __init__(
        self, client: AsyncWebClient, turn: Turn, *, interval_s: float, status_text: str
    ) -> None:
        self.client = client
        self.turn = turn
        self.status_text = status_text
        self.message = CoalescedMessage(client, turn.channel, turn.thread_ts, interval_s)
        self.lines: dict[str, ToolLine] = {}
        self.note = ""
        self.status_shown = False
        self._status_at = 0.0
        self._started = False

    async def start(self) -> None:
        """Show that the bot is working: the assistant status, or else a progress message."""
        if self._started:
            return
        self._started = True
        if await self._set_status(self.status_text):
            return
        self._render()  # no status here: a threaded "Working on it…" message instead

    async def _set_status(self, status: str) -> bool:
        response = await safe_call(
            self.client.assistant_threads_setStatus,
            channel_id=self.turn.channel,
            thread_ts=self.turn.thread_ts,
            status=status,
        )
        if response is not None:
            self.status_shown = True
            self._status_at = asyncio.get_running_loop().time()
        return response is not None

    def tool_started(self, event: ToolStarted, note: str = "") -> None:
        if note:
            self.note = note
        self.lines[event.call_id] = ToolLine(event.call_id, event.name)
        self._render()
        if self.status_shown:
            now = asyncio.get_running_loop().time()
            if now - self._status_at > STATUS_REFRESH_S:
                self._status_at = now
                asyncio.create_task(self._set_status(f"is running {event.name}…"))  # noqa: RUF006

    def tool_finished(self, event: ToolFinished) -> None:
        line = self.lines.setdefault(event.call_id, ToolLine(event.call_id, event.name))
        line.duration_ms = event.duration_ms
        if event.ok:
            line.state = "done"
        elif event.error == "Cancelled":
            line.state = "stopped"
        else:
            line.state = "failed"
            line.reason = event.preview
        self._render()

    async def finish(self) -> None:
        """Leave a record of the tools used; remove a bare "Working on it…" message."""
        if not self.lines:
            await self.message.delete()
            return
        self._render(finished=True)
        await self.message.flush()

    def _render(self, finished: bool = False) -> None:
        lines = list(self.lines.values())
        stop = stop_value(self.turn)
        self.message.set(
            progress_text(lines, self.note, finished),
            progress_blocks(lines, self.note, finished, stop),
        )


def stop_value(turn: Turn) -> str:
    """What the Stop button carries: the thread, and who asked."""
    return json.dumps(
        {"team": turn.team, "channel": turn.channel, "thread": turn.thread_ts, "user": turn.user},
        separators=(",", ":"),
    )
