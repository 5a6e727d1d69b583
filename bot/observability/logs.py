"""Logging set-up: plain text, or with ``LOG_FORMAT=json`` one JSON object per line, each
carrying the turn, team, channel, thread, user (IDs only), round and tool where they apply.

Secrets never reach a line, whichever library logged it: every record is redacted as it is
made (its message and traceback: :func:`redact_record`, so a handler another library
attached writes it redacted too), and every handler of ours redacts what it writes
(:class:`RedactingFormatter`), with the secrets of bot/observability/redaction.py. Other
libraries' lines at INFO and above show no URL's query, and the HTTP clients' request lines
(``HTTP Request: POST <url>``) are only logged at DEBUG.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any

from bot.observability import context
from bot.observability.redaction import REDACTOR, Redactor, without_queries

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTEXT_ATTRIBUTE = "slack_agent_context"
# The bot's own loggers; any other is another library's (or, ``tools.mcp.server``, what an
# MCP server wrote on its stderr).
OWN_LOGGERS = ("bot", "tools", "permissions")
RELAYED = "tools.mcp.server"
# Loggers that write each request's URL at INFO: heard only at DEBUG.
URL_LOGGERS = ("httpx2", "httpx", "httpcore2", "httpcore")


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
            line["exception"] = record.exc_text or self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


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
    """Set up the root logger with :func:`handler`; every record redacted as it is made;
    the HTTP clients' request lines only at DEBUG; Python's last-resort handler (records
    of a logger without handlers that does not propagate) redacting too."""
    logging.basicConfig(level=level.upper(), handlers=[handler(kind, stream)], force=True)
    install_record_redaction()
    debug = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in URL_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.WARNING)
    last_resort = handler(kind, stream)
    last_resort.setLevel(logging.WARNING)
    logging.lastResort = last_resort


def foreign(name: str) -> bool:
    """Whether a logger is another library's (or relays what an MCP server wrote)."""
    if name == RELAYED or name.startswith(RELAYED + "."):
        return True
    return not any(name == own or name.startswith(own + ".") for own in OWN_LOGGERS)


_PLAIN = logging.Formatter()


def redact_record(record: logging.LogRecord, redactor: Redactor = REDACTOR) -> None:
    """Replace the secrets in a record's message, traceback and stack, in place (its
    message becomes the formatted text only when something was replaced); another
    library's record at INFO and above loses its URLs' queries too."""
    hide_queries = record.levelno >= logging.INFO and foreign(record.name)

    def clean(text: str) -> str:
        text = redactor.redact(text)
        return without_queries(text) if hide_queries else text

    try:
        message = record.getMessage()
    except Exception:  # a bad format: the handler reports it (our formatters redact)
        return
    cleaned = clean(message)
    if cleaned != message:
        record.msg, record.args = cleaned, None
    if record.exc_info and not record.exc_text:
        traceback = _PLAIN.formatException(record.exc_info)
        cleaned = clean(traceback)
        if cleaned != traceback:
            record.exc_text = cleaned
    if record.stack_info:
        record.stack_info = clean(record.stack_info)


class RedactingRecordFactory:
    """The log record factory, wrapped: each record redacted as it is made."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        redact_record(record)
        return record


def install_record_redaction() -> None:
    """Redact every record as it is made, whoever logs it and whichever handler writes it
    (once per process)."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, RedactingRecordFactory):
        logging.setLogRecordFactory(RedactingRecordFactory(current))


def log_format_from(value: str | None) -> str:
    kind = (value or "text").strip().lower()
    if kind not in ("text", "json"):
        raise ValueError(f"LOG_FORMAT must be text or json, not {value!r}")
    return kind
