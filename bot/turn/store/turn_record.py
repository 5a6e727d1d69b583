"""What a turn's record holds, as read from Redis (pure): the state
(:mod:`bot.turn.states`), the round, the attempts, what to show the person once the loop
has ended, the messages to store in history, the Slack delivery record, and, read beside
it, the journal and the calls already run again (written by ``records.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.agent.result import StopReason
from bot.turn.states import TurnState

Message = dict[str, Any]


@dataclass(frozen=True)
class TurnRecord:
    state: TurnState
    attempts: int = 0
    round: int = 0
    text: str = ""  # what to show the person, once settled
    outcome: StopReason | None = None  # how the loop ended, once settled
    messages: list[Message] = field(default_factory=list)  # the turn, for history
    delivery: dict[str, Any] = field(default_factory=dict)  # the Slack delivery record
    delivering_since: float | None = None  # when the first delivery attempt began
    journal: list[Message] = field(default_factory=list)
    reruns: frozenset[str] = frozenset()
    parked: list[str] = field(default_factory=list)  # awaiting approval: the calls waiting
    # The thread's stored history as begin read it (a running turn), else None
    history: list[str] | None = None

    @property
    def reason(self) -> StopReason:
        """How the loop ended (a settled turn); a record written without it counts as
        answered."""
        return self.outcome or StopReason.ANSWERED

    @classmethod
    def parse(
        cls,
        data: Mapping[str, str],
        journal: Iterable[str] = (),
        reruns: Iterable[str] = (),
    ) -> TurnRecord:
        since = data.get("delivering_since")
        return cls(
            state=TurnState(data.get("state", TurnState.QUEUED)),
            attempts=int(data.get("attempts", 0)),
            round=int(data.get("round", 0)),
            text=data.get("text", ""),
            outcome=StopReason(data["outcome"]) if data.get("outcome") else None,
            messages=json.loads(data["messages"]) if data.get("messages") else [],
            delivery=json.loads(data["delivery"]) if data.get("delivery") else {},
            delivering_since=float(since) if since else None,
            journal=[json.loads(item) for item in journal],
            reruns=frozenset(reruns),
            parked=json.loads(data["parked"]) if data.get("parked") else [],
        )
