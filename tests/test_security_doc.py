"""docs/security.md names the tests that prove each boundary: every file and test it names
exists, so the page cannot drift from the suite."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "security.md"
# `path/to/test_x.py` or `path/to/test_x.py::test_name`, and `::test_name` for the file before.
CITED = re.compile(r"`((?:[\w/]+/)?test_\w+\.py)?(?:::(test_\w+))?`")


def cited() -> list[tuple[str, str | None]]:
    found, last = [], None
    for path, name in CITED.findall(PAGE.read_text()):
        if path:
            last = path
        if path or name:
            assert last is not None, f"::{name} before any file"
            found.append((last, name or None))
    return found


def test_every_cited_test_exists() -> None:
    citations = cited()
    assert len(citations) > 30
    missing = []
    for path, name in citations:
        file = ROOT / "tests" / path
        if not file.is_file():
            missing.append(path)
        elif name and not re.search(rf"^(async )?def {name}\(", file.read_text(), re.M):
            missing.append(f"{path}::{name}")
    assert missing == []
