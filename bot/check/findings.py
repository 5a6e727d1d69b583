"""What `slack-agent check` found: one line per thing checked, and the exit code (pure)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail", "skip"]

MARKS: dict[Status, str] = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "skip"}


@dataclass(frozen=True)
class Finding:
    area: str  # "config", "environment", "redis", "llm", "slack", "socket mode", "mcp NAME"
    status: Status
    detail: str  # plain words

    @property
    def line(self) -> str:
        return f"[{MARKS[self.status]}] {self.area}: {self.detail}"


def ok(area: str, detail: str) -> Finding:
    return Finding(area, "ok", detail)


def warn(area: str, detail: str) -> Finding:
    return Finding(area, "warn", detail)


def fail(area: str, detail: str) -> Finding:
    return Finding(area, "fail", detail)


def skip(area: str, detail: str) -> Finding:
    return Finding(area, "skip", detail)


def reason(exc: BaseException) -> str:
    """An exception in a few words: its kind, and its message when it has one."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when everything holds (warnings hold), 1 when anything failed."""
    return 1 if any(f.status == "fail" for f in findings) else 0


def as_text(findings: list[Finding]) -> str:
    failed = sum(f.status == "fail" for f in findings)
    warned = sum(f.status == "warn" for f in findings)
    summary = (
        f"{failed} problem(s), {warned} warning(s)"
        if failed
        else f"all checks passed, {warned} warning(s)"
    )
    return "\n".join([*(f.line for f in findings), summary])


def as_json(findings: list[Finding]) -> str:
    return json.dumps(
        {"ok": exit_code(findings) == 0, "checks": [asdict(f) for f in findings]}, indent=2
    )
