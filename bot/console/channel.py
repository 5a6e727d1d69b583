"""``slack-agent chat --channel C…``: the console's turns in a channel's settings, as a Slack
turn there has them (read before each prompt: the file's entry and the values set in
Slack): its tools narrowed, its instructions and notes after the base system prompt,
``remember`` where its memory is on, its daily budget. The console knows no Slack, so the
channel is taken as one of this workspace (the ``external`` entry does not apply)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.channels.prompt import channel_context
from bot.channels.reader import ChannelView
from bot.llm.model import ChatModel
from bot.llm.tokens import TokenEstimator
from tools.definition import Tool


@dataclass(frozen=True)
class ConsoleChannel:
    id: str
    read: Callable[[], Awaitable[ChannelView]]  # its settings and notes, now
    # ``remember`` for one prompt (its key: the prompt's id), None where the person may not
    remember: Callable[[ChannelView, str], Tool | None]
    model: Callable[[ChannelView], Awaitable[ChatModel]]  # within its budget too
    estimator: TokenEstimator

    def context(self, view: ChannelView) -> str:
        """The channel's instructions and notes, for after the system prompt."""
        return channel_context(view, self.estimator, dm=self.id.startswith("D"))


def prompt_id() -> str:
    """A console prompt's id (it keys the prompt's ``remember`` calls)."""
    return f"console-{uuid.uuid4().hex}"
