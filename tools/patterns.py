"""Name globs, shared by tool sources (MCP allow and deny lists)."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase


def matches(patterns: Iterable[str], name: str) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)
