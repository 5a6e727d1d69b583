"""Tool-name patterns: globs that allow, and ``!globs`` that deny. A deny always wins."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase


def allows(patterns: Iterable[str], name: str) -> bool:
    """True when some pattern allows ``name`` and no ``!pattern`` denies it."""
    allowed = False
    for pattern in patterns:
        if pattern.startswith("!"):
            if fnmatchcase(name, pattern[1:]):
                return False
        elif fnmatchcase(name, pattern):
            allowed = True
    return allowed
