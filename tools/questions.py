"""A question a tool asks the person it runs for (MCP elicitation), and their answer.

The surface decides how to ask: Slack posts a form or buttons in the thread, the console
asks on the terminal. Nobody to ask, or no answer in time, is a decline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class Question:
    asker: str  # who asks, in words: "the MCP server jira"
    message: str
    # A flat JSON schema object: the fields to fill in. No properties: a yes/no question.
    schema: dict[str, Any] = field(default_factory=dict)
    url: str | None = None  # URL mode: the person is asked to open this page
    timeout_s: float = 300.0


@dataclass(frozen=True)
class Answer:
    action: Action
    content: dict[str, Any] | None = None  # the fields, when a form was accepted

    @classmethod
    def declined(cls) -> Answer:
        return cls("decline")


class Asker(Protocol):
    async def ask(self, question: Question) -> Answer:
        """Ask the person; an unanswered question is declined after ``timeout_s``."""
        ...
