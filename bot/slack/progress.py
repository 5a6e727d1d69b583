"""What the person sees while a turn runs: the assistant status at once, and one threaded
progress message listing each tool as running, done in N ms, or failed, with a Stop button.

The message is tagged and recorded in the delivery record (its ts, and the tool rows shown),
so a turn resumed on another worker takes it over instead of leaving a "running…" message
with a live Stop button behind. At the end its final form is written at once: the tools
used, without the button (or the message goes, when no tool ran).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.events import ToolFinished, ToolStarted
from bot.slack.background import Background
from bot.slack.blocks import ToolLine, progress_blocks, progress_text
from bot.slack.calls import safe_call
from bot.slack.coalesced import CoalescedMessage
from bot.slack.errors import MESSAGE_GONE, error_code
from bot.slack.ledger import DeliveryLedger
from bot.slack.tagging import Me, find_own, tag
from bot.turn import Turn

log = logging.getLogger(__name__)

STATUS_REFRESH_S = 90.0  # Slack drops a status after two minutes without a reply


class ProgressView:
    def __init__(
        self,
        client: AsyncWebClient,
        turn: Turn,
        entry_id: str,
        ledger: DeliveryLedger,
        who_am_i: Callable[[], Awaitable[Me]],
        *,
        interval_s: float,
        status_text: str,
    ) -> None:
        self.client = client
        self.turn = turn
        self.ledger = ledger
        self.who_am_i = who_am_i
        self.status_text = status_text
        record = ledger.record
        self.message = CoalescedMessage(
            client,
            turn.channel,
            turn.thread_ts,
            interval_s,
            guard=ledger.valid,
            metadata=tag(turn.message_ts, entry_id, "progress"),
            before_post=self._before_post,
            on_posted=self._posted,
            on_written=self._written,
        )
        if record.progress_ts:
            self.message.adopt(record.progress_ts)
        self.lines: dict[str, ToolLine] = {
            str(line["call_id"]): ToolLine(**line) for line in record.progress_lines
        }
        self.note = ""
        self.status_shown = False
        self._status_at = 0.0
        self._started = False
        self.background = Background()
        self._saved_lines = list(record.progress_lines)

    async def find_posted(self) -> None:
        """A progress message was posted without its ts being learnt (a crash, a timeout, a
        5xx after Slack applied it): find it by its tag and take it over. Raises
        DeliveryFailed when Slack cannot be asked now."""
        record = self.ledger.record
        if not record.progress_posting or record.progress_ts:
            return
        found = await find_own(self.client, self.turn, self.who_am_i)
        ts = next((m.ts for m in found if m.is_for(self.turn.message_ts, "progress")), "")
        if ts:
            self.message.adopt(ts)
            await self._posted(ts)
            return
        record.progress_posting = False  # it never reached Slack
        await self.ledger.save()

    def start(self) -> None:
        """Show that the bot is working (in the background): the assistant status, or else
        a progress message."""
        if self._started:
            return
        self._started = True
        self.background.spawn(self._start())

    async def _start(self) -> None:
        if await self._set_status(self.status_text):
            if self.lines and self.message.ts:
                self._render()  # resumed: the message shows this attempt's tools again
            return
        self._render()  # no status here: a threaded "Working on it…" message instead

    async def _set_status(self, status: str) -> bool:
        if not self.ledger.valid():
            return False
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
                self.background.spawn(self._set_status(f"is running {event.name}…"))

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

    async def finish(self, results: Mapping[str, str]) -> None:
        """Write the final form now: the tools used and no Stop button, or no message at all
        when no tool ran. A row an earlier attempt left "running" takes its outcome from the
        turn's tool ``results`` (call id -> content). Raises Slack's error, so delivery tries
        again."""
        record = self.ledger.record
        if record.progress_closed:
            return
        await self.background.settle()  # the status, or the "Working on it…" decision
        await self.message.settle()
        await self.find_posted()
        for line in self.lines.values():
            if line.state == "running":
                settle_line(line, results.get(line.call_id))
        if self.lines:
            lines = list(self.lines.values())
            try:
                await self.message.write_now(
                    progress_text(lines, self.note, True), progress_blocks(lines, self.note, True)
                )
            except Exception as exc:
                if error_code(exc) not in MESSAGE_GONE:
                    raise
                log.info("the progress message in %s is gone; nothing to close", self.turn.channel)
        else:
            await self.message.delete_now()
        record.progress_closed = True
        await self.ledger.save()

    async def close(self) -> None:
        await self.background.close()
        await self.message.close()

    def _render(self) -> None:
        lines = list(self.lines.values())
        self.message.set(
            progress_text(lines, self.note, False),
            progress_blocks(lines, self.note, False, stop_value(self.turn)),
        )

    async def _before_post(self) -> str | None:
        """Before posting the progress message: if an earlier post's outcome is unknown,
        look for it first (its ts, to edit instead); else note that a post is going out."""
        record = self.ledger.record
        if record.progress_posting and not record.progress_ts:
            await self.find_posted()
            if record.progress_ts:
                return record.progress_ts
        record.progress_posting = True
        await self.ledger.save()
        return None

    async def _posted(self, ts: str) -> None:
        record = self.ledger.record
        record.progress_ts, record.progress_posting = ts, False
        await self.ledger.save()

    async def _written(self) -> None:
        lines = [asdict(line) for line in self.lines.values()]
        if lines != self._saved_lines:
            self.ledger.record.progress_lines = lines
            await self.ledger.save()
            self._saved_lines = lines


def settle_line(line: ToolLine, result: str | None) -> None:
    """A row whose end this attempt did not see: done, failed (with the reason), or stopped
    when the turn has no result for it."""
    if result is None:
        line.state = "stopped"
        return
    try:
        error = json.loads(result)
    except ValueError:
        error = None
    if isinstance(error, dict) and "error" in error:
        line.state, line.reason = "failed", str(error.get("message") or error["error"])
    else:
        line.state = "done"


def stop_value(turn: Turn) -> str:
    """What the Stop button carries: the thread, and who asked."""
    return json.dumps(
        {"team": turn.team, "channel": turn.channel, "thread": turn.thread_ts, "user": turn.user},
        separators=(",", ":"),
    )
