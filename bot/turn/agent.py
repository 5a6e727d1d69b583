"""What running a turn needs besides its state: the model, the loop's settings, and how the
surface (Slack, the console) gives a turn its tools, its context and its message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.agent.loop import LoopSettings
from bot.agent.messages import user_message
from bot.llm.model import ChatModel
from bot.llm.tokens import TokenEstimator
from bot.turn.model import Turn
from bot.turn.ports import Deadline
from tools.toolset import Toolset


@dataclass(frozen=True)
class TurnInput:
    """What the model is given for a turn: the user message (journaled and kept in history)
    and messages shown with it for this turn only, never stored (pictures)."""

    message: dict[str, Any]
    attachments: list[dict[str, Any]] = field(default_factory=list)


# The turn, its entry id, and its owner's lease (what the tools say in Slack, a question
# an MCP server asks, is said within it).
ToolsetFor = Callable[[Turn, str, Deadline], Awaitable[Toolset]]
ContextFor = Callable[[Turn], Awaitable[str]]
MessageFor = Callable[[Turn], Awaitable[TurnInput]]
ModelFor = Callable[[Turn], Awaitable[ChatModel]]


async def no_context(turn: Turn) -> str:
    return ""


async def plain_message(turn: Turn) -> TurnInput:
    return TurnInput(user_message(turn.text))


@dataclass
class Agent:
    model: ChatModel
    settings: LoopSettings
    # The tools this turn's person may use, wrapped by policy; also what decides which
    # results in the thread's history they may see (permissions/withholding.py).
    toolset_for: ToolsetFor
    history_budget: int
    estimator: TokenEstimator
    context_for: ContextFor = no_context  # what the surface knows (the channel in view)
    message_for: MessageFor = plain_message  # the user message (with files, the thread...)
    models: ModelFor | None = None  # the model for a turn (its person's limits); None: model

    async def model_for(self, turn: Turn) -> ChatModel:
        """The model this turn calls."""
        return self.model if self.models is None else await self.models(turn)
