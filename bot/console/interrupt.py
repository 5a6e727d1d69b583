"""Ctrl-C at the console, for whoever is waiting on the person now.

While a turn runs, Ctrl-C stops the turn (``chat.py``); while a sign-in waits for the
browser inside it, Ctrl-C gives up only the sign-in (``sign_in.py``), and the turn goes on
with the model told. The latest to ask is called; when nobody asks, Ctrl-C is Python's own
(``KeyboardInterrupt``: the console quits).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator


class CtrlC:
    """Who a Ctrl-C goes to: a stack of callbacks, the innermost called."""

    def __init__(self) -> None:
        self._stack: list[Callable[[], None]] = []
        self._installed = False

    @contextlib.contextmanager
    def calls(self, callback: Callable[[], None], *, enabled: bool = True) -> Iterator[None]:
        """Within the block, Ctrl-C calls ``callback`` (instead of what an outer block
        asked for). ``enabled`` False: nothing changes (a pipe, no terminal)."""
        if not enabled:
            yield
            return
        loop = asyncio.get_running_loop()
        if not self._installed:
            try:
                loop.add_signal_handler(signal.SIGINT, self._fire)
                self._installed = True
            except (NotImplementedError, RuntimeError):  # not the main thread, no signals
                yield
                return
        self._stack.append(callback)
        try:
            yield
        finally:
            self._stack.remove(callback)
            if not self._stack and self._installed:
                loop.remove_signal_handler(signal.SIGINT)
                self._installed = False

    def _fire(self) -> None:
        if self._stack:
            self._stack[-1]()
