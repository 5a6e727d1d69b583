"""The worker's way into Slack: progress while a turn runs, then the answer in the thread."""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.events import (
    AgentEvent,
    Observer,
    RoundStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from bot.agent.result import TurnResult
from bot.config.schema import SlackConfig
from bot.slack.answer import AnswerWriter, post_answer, post_markdown
from bot.slack.calls import safe_call
from bot.slack.progress import ProgressView
from bot.turn import Turn

log = logging.getLogger(__name__)

TITLE_CHARS = 60


class TurnView:
    """Everything shown for one turn; its ``__call__`` is the loop's observer."""

    def __init__(self, client: AsyncWebClient, turn: Turn, settings: SlackConfig) -> None:
        self.client = client
        self.turn = turn
        self.progress = ProgressView(
            client, turn, interval_s=settings.edit_interval_s, status_text=settings.status_text
        )
        self.answer = AnswerWriter(
            client,
            turn,
            streaming=settings.streaming,
            buffer_chars=settings.stream_buffer_chars,
            interval_s=settings.edit_interval_s,
        )

    async def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, RoundStarted):
            await self.progress.start()
        elif isinstance(event, TextDelta):
            self.answer.text(event.round, event.text)
        elif isinstance(event, ToolStarted):
            remark = self.answer.tools_called(event.round)
            self.progress.tool_started(event, remark)
        elif isinstance(event, ToolFinished):
            self.progress.tool_finished(event)

    async def finish(self, text: str) -> None:
        await self.progress.finish()
        await self.answer.finish(text)


class SlackResponder:
    def __init__(self, client: AsyncWebClient, settings: SlackConfig) -> None:
        self.client = client
        self.settings = settings
        self.views: dict[tuple[str, str, str], TurnView] = {}

    def observer(self, turn: Turn) -> Observer | None:
        view = TurnView(self.client, turn, self.settings)
        self.views[_key(turn)] = view
        if turn.kind == "assistant" and turn.extra.get("new_thread"):
            title = " ".join(turn.text.split())[:TITLE_CHARS]
            return _with_title(view, self.client, turn, title)
        return view

    async def deliver(self, turn: Turn, text: str, result: TurnResult | None) -> None:
        view = self.views.pop(_key(turn), None)
        if result is not None and result.error_detail:
            log.warning(
                "turn in %s/%s (message %s, event %s) ended %s: %s",
                turn.channel,
                turn.thread_ts,
                turn.message_ts,
                turn.event_id,
                result.stop_reason.value,
                result.error_detail,
            )
        if view is None:  # delivered again after a crash: only the text is known
            await post_answer(self.client, turn, text)
            return
        await view.finish(text)

    async def give_up(self, turn: Turn, text: str) -> None:
        view = self.views.pop(_key(turn), None)
        if view is not None:
            await view.progress.finish()
        await post_markdown(self.client, turn.channel, turn.thread_ts, text)


def _key(turn: Turn) -> tuple[str, str, str]:
    return (turn.channel, turn.thread_ts, turn.message_ts)


def _with_title(view: TurnView, client: AsyncWebClient, turn: Turn, title: str) -> Observer:
    """Name a new agent-pane thread after its first question, once, at the first event."""
    titled = False

    async def observe(event: AgentEvent) -> None:
        nonlocal titled
        if not titled:
            titled = True
            await safe_call(
                client.assistant_threads_setTitle,
                channel_id=turn.channel,
                thread_ts=turn.thread_ts,
                title=title,
            )
        await view(event)

    return observe
