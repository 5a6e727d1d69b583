"""slack_sdk's Socket Mode clients log every retry with a full traceback (every ping
interval, per connection, while Slack cannot be reached). This filter keeps each kind of
line, without its traceback, at most once per ``every_s``."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

SESSION = re.compile(r"\bs_\d+\b")
DETAIL = re.compile(r"\(.*")  # "(error: ..., session: ...)": what varies from line to line


class QuietSdkLog(logging.Filter):
    def __init__(self, every_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.every_s = every_s
        self.clock = clock
        self.last: dict[tuple[int, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        if record.levelno < logging.WARNING:
            return True  # "a new session has been established" and friends: always
        kind = (record.levelno, DETAIL.sub("", SESSION.sub("", record.getMessage())).strip())
        now = self.clock()
        last = self.last.get(kind)
        if last is not None and now - last < self.every_s:
            return False
        self.last[kind] = now
        return True
