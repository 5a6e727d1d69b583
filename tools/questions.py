"""A question a tool asks the person it runs for (MCP elicitation), and their answer.

The surface decides how to ask: Slack posts a form or buttons in the thread, the console
asks on the terminal. Nobody to ask, or no answer in time, is a decline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

Action = Literal["accept", "decline", "cancel"]

URL_MAX_CHARS = 3000  # the longest URL a Slack button takes


@dataclass(frozen=True)
class Question:
    asker: str  # who asks, in words: "the MCP server jira"
    message: str
    # A flat JSON schema object: the fields to fill in. No properties: a yes/no question.
    schema: dict[str, Any] = field(default_factory=dict)
    url: str | None = None  # URL mode: the person is asked to open this page (https only)
    timeout_s: float = 300.0


@dataclass(frozen=True)
class Answer:
    action: Action
    content: dict[str, Any] | None = None  # the fields, when a form was accepted

    @classmethod
    def declined(cls) -> Answer:
        return cls("decline")


def page_host(url: str) -> str | None:
    """The host a URL question sends the person to, in ASCII (``xn--`` for a name in other
    scripts, so a look-alike shows), when the URL may be shown as a link: ``https``, a host,
    no user name or password, no whitespace, control characters or backslashes (which
    browsers and parsers read differently), at most ``URL_MAX_CHARS``. None for any other
    (``http:``, ``javascript:``, ``data:``, ...): such a question is declined."""
    if len(url) > URL_MAX_CHARS or "\\" in url:
        return None
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return None
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # a port that is no number raises
    except ValueError:
        return None
    if parts.scheme != "https" or not host or parts.username is not None:
        return None
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


class Asker(Protocol):
    async def ask(self, question: Question) -> Answer:
        """Ask the person; an unanswered question is declined after ``timeout_s``."""
        ...
