"""How many worker processes a command runs beside itself (pure): the number given with
``--workers`` / ``--processes``, else one per CPU; none beside the embedded Redis, which
lives inside one process and cannot be shared."""

from __future__ import annotations

import os

from bot.config.errors import ConfigError


def cpu_count() -> int:
    """The CPUs of this machine (``os.cpu_count()``; 1 when it cannot tell)."""
    return os.cpu_count() or 1


def worker_processes(requested: int | None, *, option: str, embedded: bool, cpus: int) -> int:
    """The worker processes to run: ``requested`` (``option`` on the command line) when
    given, else ``cpus``. 0 means the worker loop runs in the command's own process. With
    the embedded Redis (no REDIS_URL) the default is 0, and asking for worker processes is
    a :class:`ConfigError` naming ``option``."""
    if requested is not None and requested < 0:
        raise ConfigError(f"{option} {requested}: give 0 or more worker processes")
    if not embedded:
        return cpus if requested is None else requested
    if requested:
        raise ConfigError(
            f"{option} {requested}: worker processes need REDIS_URL, they cannot share the "
            f"embedded in-process Redis; set REDIS_URL, or give {option} 0 (the worker "
            "runs in this process)"
        )
    return 0
