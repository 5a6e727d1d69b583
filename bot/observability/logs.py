"""Logging set-up: plain text, or with ``LOG_FORMAT=json`` one JSON object per line, each
carrying the turn, team, channel, thread, user (IDs only), round and tool where they apply.

Secrets never reach a line: :class:`Redactor` replaces every configured secret (Slack
tokens, the signing secret, the OpenAI key, MCP headers and env values) in the formatted
output, whichever library logged it.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import IO

from bot.observability import context

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6  # shorter values (test placeholders, "1") would blot out ordinary words
CONTEXT_ATTRIBUTE = "slack_agent_context"


class ContextFilter(logging.Filter):
    """Copies the turn's fields (bot/observability/context.py) onto each record, as the
    ``context`` attribute (``thread`` is taken on a record: the thread's id)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, CONTEXT_ATTRIBUTE):
            setattr(record, CONTEXT_ATTRIBUTE, context.fields())
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the context fields that
    apply, and the exception's traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, CONTEXT_ATTRIBUTE, None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class Redactor:
    """The secrets to keep out of the log, shared by every handler's formatter."""

    def __init__(self) -> None:
        self._secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def add(self, values: Iterable[str | None]) -> None:
        with self._lock:
            known = set(self._secrets)
            known.update(v for v in values if v and len(v) >= MIN_SECRET_CHARS)
            # Longest first, so a secret containing another is replaced whole.
            self._secrets = tuple(sorted(known, key=len, reverse=True))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


REDACTOR = Redactor()


class RedactingFormatter(logging.Formatter):
    """Wraps a formatter: what it writes has every known secret replaced."""

    def __init__(self, inner: logging.Formatter, redactor: Redactor = REDACTOR) -> None:
        super().__init__()
        self.inner = inner
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor.redact(self.inner.format(record))


def formatter(kind: str) -> logging.Formatter:
    """The formatter for ``LOG_FORMAT`` (``json`` or ``text``), redacting secrets."""
    inner = JsonFormatter() if kind.strip().lower() == "json" else logging.Formatter(TEXT_FORMAT)
    return RedactingFormatter(inner)


def handler(kind: str = "text", stream: IO[str] | None = None) -> logging.Handler:
    """A stream handler with the context filter and the (redacting) formatter for
    ``kind``."""
    made = logging.StreamHandler(stream or sys.stderr)
    made.addFilter(ContextFilter())
    made.setFormatter(formatter(kind))
    return made


def configure(level: str, kind: str = "text", stream: IO[str] | None = None) -> None:
    """Set up the root logger with :func:`handler`."""
    logging.basicConfig(level=level.upper(), handlers=[handler(kind, stream)], force=True)


def log_format_from(value: str | None) -> str:
    kind = (value or "text").strip().lower()
    if kind not in ("text", "json"):
        raise ValueError(f"LOG_FORMAT must be text or json, not {value!r}")
    return kind
