"""The test modules as pytest's assertion rewriting makes them, cached once before the xdist
workers start.

pytest rewrites the asserts of each test module (and conftest) it imports, and caches the
result in ``__pycache__`` unless ``PYTHONDONTWRITEBYTECODE`` is set, as on this project's CI
machines: then every worker rewrites every module again, over half of the CPU of its
collection (9.4 s of CPU to collect the suite, 4.2 s with the cache). pytest still reads a
cached rewrite, so the controller writes one for each module before the workers start (the
modules the rewrite was cached for already are skipped: a few milliseconds each). This uses
pytest's own rewriting functions, which are not public: if a pytest release moves them,
nothing is cached and each worker rewrites as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest


def modules_rewritten(root: Path) -> list[Path]:
    """The modules under ``root`` pytest rewrites when it collects them: test modules and
    conftest files (pyproject's pytest settings keep the default ``python_files``)."""
    found = [*root.rglob("test_*.py"), *root.rglob("conftest.py")]
    return sorted(path for path in found if "__pycache__" not in path.parts)


def cache_rewrites(config: pytest.Config, modules: Iterable[Path]) -> int:
    """Write pytest's cached rewrite of each module that has none up to date; return how
    many were written."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    needed = ("assertstate_key", "get_cache_dir", "PYC_TAIL", "_read_pyc", "_rewrite_test")
    if not all(hasattr(rewrite, name) for name in (*needed, "try_makedirs", "_write_pyc")):
        return 0
    state = config.stash.get(rewrite.assertstate_key, None)
    if state is None:
        return 0  # assertion rewriting is off (--assert=plain)
    written = 0
    for module in modules:
        pyc = rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(module, pyc) is not None:
            continue
        source_hash, code = rewrite._rewrite_test(module, config)
        if rewrite.try_makedirs(pyc.parent) and rewrite._write_pyc(state, code, source_hash, pyc):
            written += 1
    return written
