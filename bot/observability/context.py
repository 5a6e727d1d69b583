"""What a log line is about: the turn, its thread and person (IDs only), the round and the
tool, kept in context variables by the code that knows them (the turn's owner, the loop, the
tool call) and read by :class:`bot.observability.logs.ContextFilter`.

Context variables follow asyncio tasks: a tool call's task sees its turn and round, and the
fields are gone once the code that set them returns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class TurnContext:
    turn: str
    team: str
    channel: str
    thread: str
    user: str


TURN: ContextVar[TurnContext | None] = ContextVar("slack_agent_turn", default=None)
ROUND: ContextVar[int | None] = ContextVar("slack_agent_round", default=None)
TOOL: ContextVar[str | None] = ContextVar("slack_agent_tool", default=None)


@contextlib.contextmanager
def turn_context(context: TurnContext) -> Iterator[None]:
    token = TURN.set(context)
    try:
        yield
    finally:
        TURN.reset(token)


@contextlib.contextmanager
def tool_context(name: str) -> Iterator[None]:
    token = TOOL.set(name)
    try:
        yield
    finally:
        TOOL.reset(token)


@contextlib.contextmanager
def rounds_context() -> Iterator[None]:
    """Around a turn's loop: the round it sets is forgotten when the loop returns."""
    token = ROUND.set(None)
    try:
        yield
    finally:
        ROUND.reset(token)


def fields() -> dict[str, str | int]:
    """The fields that apply where this is called."""
    found: dict[str, str | int] = {}
    turn = TURN.get()
    if turn is not None:
        found.update(
            turn=turn.turn,
            team=turn.team,
            channel=turn.channel,
            thread=turn.thread,
            user=turn.user,
        )
    round_number = ROUND.get()
    if round_number is not None:
        found["round"] = round_number
    tool = TOOL.get()
    if tool is not None:
        found["tool"] = tool
    return found
