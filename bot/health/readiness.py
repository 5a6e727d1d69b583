"""Readiness: named checks, each saying in plain words what is wrong, or nothing.

A check is an async callable returning ``None`` when it holds and a short sentence when it
does not. A check that raises or takes longer than ``timeout_s`` fails with that as its
reason. The report lists every check, so one look says which one fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Check = Callable[[], Awaitable[str | None]]

OK = "ok"


@dataclass(frozen=True)
class Report:
    checks: dict[str, str]  # name -> "ok" or what is wrong

    @property
    def ready(self) -> bool:
        return all(value == OK for value in self.checks.values())

    def as_json(self) -> dict[str, Any]:
        failing = [f"{name}: {why}" for name, why in self.checks.items() if why != OK]
        return {"ready": self.ready, "checks": self.checks, "failing": failing}


@dataclass
class Readiness:
    checks: dict[str, Check] = field(default_factory=dict)
    timeout_s: float = 2.0

    def add(self, name: str, check: Check) -> None:
        self.checks[name] = check

    async def report(self) -> Report:
        names = list(self.checks)
        results = await asyncio.gather(*(self._run(self.checks[n]) for n in names))
        return Report(dict(zip(names, results, strict=True)))

    async def _run(self, check: Check) -> str:
        try:
            async with asyncio.timeout(self.timeout_s):
                problem = await check()
        except TimeoutError:
            return f"no answer within {self.timeout_s:g} s"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return OK if problem is None else problem


def redis_check(ping: Callable[[], Awaitable[Any]]) -> Check:
    async def check() -> str | None:
        try:
            await ping()
        except Exception as exc:
            return f"unreachable ({type(exc).__name__})"
        return None

    return check


def worker_check(alive: Callable[[], bool]) -> Check:
    async def check() -> str | None:
        return None if alive() else "no worker loop is running"

    return check
