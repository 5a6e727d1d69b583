"""A worker process never outlives its supervisor.

The supervisor holds the only write end of a pipe (:class:`Lifeline`); each worker process
gets the read end (``worker --supervisor-pipe FD``) and :func:`hold_on` to it: when the
supervisor dies, even by SIGKILL, the kernel closes the write end, the worker reads end of
file and kills itself at once. On Linux the kernel is also asked to send the worker SIGKILL
when its parent dies (``prctl(PR_SET_PDEATHSIG)``). Either way its turns are left to be taken
over after their leases expire, as with any worker that died, and no orphan keeps working.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading

from bot.config.errors import ConfigError

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Lifeline:
    """The supervisor's side: a pipe whose write end never leaves this process (it is not
    inheritable, and nothing is ever written to it)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()  # both close on exec; the read end is
        # passed to each worker process explicitly (pass_fds)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def hold_on(fd: int) -> None:
    """The worker's side: die with the supervisor whose lifeline is ``fd``. A descriptor
    that is not open is a :class:`ConfigError` naming ``--supervisor-pipe``."""
    try:
        os.fstat(fd)
    except OSError:
        raise ConfigError(f"--supervisor-pipe {fd}: no such open file descriptor") from None
    if sys.platform == "linux":
        _die_with_parent()
    threading.Thread(target=_watch, args=(fd,), name="supervisor-lifeline", daemon=True).start()


def _watch(fd: int) -> None:
    """Block until the supervisor is gone (end of file, or the pipe broken), then die."""
    while True:
        try:
            if not os.read(fd, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    os.kill(os.getpid(), signal.SIGKILL)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (best effort: the lifeline
    pipe works without it)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.debug("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
    except (OSError, AttributeError):
        log.debug("prctl is not available", exc_info=True)
