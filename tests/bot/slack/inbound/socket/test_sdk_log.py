from __future__ import annotations

import logging

from bot.slack.inbound.socket.sdk_log import QuietSdkLog


def record(level: int, message: str, *, traceback: bool = False) -> logging.LogRecord:
    exc_info = None
    if traceback:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError as exc:
            exc_info = (type(exc), exc, exc.__traceback__)
    return logging.LogRecord("sdk", level, __file__, 1, message, None, exc_info)


def test_a_repeated_error_passes_once_a_minute_without_its_traceback() -> None:
    now = [0.0]
    quiet = QuietSdkLog(every_s=60, clock=lambda: now[0])
    first = record(
        logging.ERROR, "Failed to connect (error: refused 1); Retrying...", traceback=True
    )
    assert quiet.filter(first) and first.exc_info is None
    now[0] = 3.0
    assert not quiet.filter(
        record(logging.ERROR, "Failed to connect (error: refused 2); Retrying...")
    )
    assert quiet.filter(record(logging.ERROR, "Failed to send a ping message (s_123): x"))
    now[0] = 61.0
    assert quiet.filter(record(logging.ERROR, "Failed to connect (error: refused 3); Retrying..."))


def test_info_lines_always_pass() -> None:
    quiet = QuietSdkLog(every_s=60, clock=lambda: 0.0)
    line = "A new session (s_1) has been established"
    assert quiet.filter(record(logging.INFO, line)) and quiet.filter(record(logging.INFO, line))
