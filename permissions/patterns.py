"""Tool-name patterns: globs that allow, and ``!globs`` that deny."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase


def allows(patterns: Iterable[str], name: str) -> bool:
    """True when some pattern allows ``name`` and no ``!pattern`` of the same list denies it."""
    patterns = list(patterns)
    return not denies(patterns, name) and any(
        fnmatchcase(name, p) for p in patterns if not p.startswith("!")
    )


def denies(patterns: Iterable[str], name: str) -> bool:
    return any(fnmatchcase(name, p[1:]) for p in patterns if p.startswith("!"))


def matches_any(pattern: str, names: Iterable[str]) -> bool:
    """Does ``pattern`` (allow or deny) name at least one of ``names``?"""
    glob = pattern[1:] if pattern.startswith("!") else pattern
    return any(fnmatchcase(name, glob) for name in names)
