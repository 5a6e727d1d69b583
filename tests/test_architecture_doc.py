"""docs/architecture.md has a line for every package, and no line for a package that is gone;
every module path it names exists. So the page cannot drift from the tree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
TOP = ("bot", "tools", "permissions")
ROW = re.compile(r"^\| `([\w/]+/)` \| \S", re.M)  # | `bot/turn/` | what it holds |
PATH = re.compile(r"(?<![\w/.])((?:bot|tools|permissions|tests|benchmarks)/[\w/]+\.py)\b")


def packages() -> set[str]:
    """Every folder of the project's code that holds a Python module."""
    return {
        path.parent.relative_to(ROOT).as_posix() + "/"
        for top in TOP
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts
    }


def section(title: str) -> str:
    text = PAGE.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_every_package_has_one_line_and_every_line_a_package() -> None:
    rows = ROW.findall(section("Packages"))
    assert len(rows) == len(set(rows)), "a package has two lines"
    assert sorted(packages() - set(rows)) == [], "packages without a line in the page"
    assert sorted(set(rows) - packages()) == [], "lines for packages that are gone"


def test_every_module_the_page_names_exists() -> None:
    named = set(PATH.findall(PAGE.read_text()))
    assert len(named) > 20
    assert sorted(p for p in named if not (ROOT / p).is_file()) == []


OUTSIDE = re.compile(r"\.\./|DESIGN\.md|(?<![\w.])/work/")  # a path above the repository


def test_the_docs_name_no_file_outside_the_repository() -> None:
    """The repository stands alone: no page points a reader at a file it does not hold."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [
        f"{page.name}:{number}: {line.strip()}"
        for page in pages
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []
