"""What one run of the MCP conformance suite found, scenario by scenario, from its results
directory (``conformance client -o DIR``: a ``checks.json`` per scenario).

Usage: python tests/conformance/summary.py REVISION RESULTS_DIR REQUIREMENTS_YAML
Prints a Markdown table of the revision's scored client scenarios (pass or fail, and the first
failing check) and ends with one line: how many scored scenarios pass.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml


def scored(requirements: Path) -> list[str]:
    """The client scenarios a revision requires (its requirement set's ``client`` list)."""
    document: dict[str, Any] = yaml.safe_load(requirements.read_text())
    return [str(name) for name in document.get("client") or []]


def verdict(results: Path, scenario: str) -> tuple[bool, str]:
    """Whether the scenario's newest run passed, and why not, in one line."""
    runs = sorted(results.glob(f"{scenario}-20*"))
    if not runs:
        return False, "no result (the scenario did not run)"
    checks: list[dict[str, Any]] = json.loads((runs[-1] / "checks.json").read_text())
    failed = [check for check in checks if check.get("status") == "FAILURE"]
    if not failed:
        return True, f"all {len(checks)} checks pass"
    first = failed[0]
    why = " ".join(str(first.get("errorMessage") or first.get("description") or "").split())
    return False, f"{len(failed)}/{len(checks)} checks fail; {first.get('id')}: {why[:200]}"


def main(argv: list[str]) -> int:
    revision, results, requirements = argv[1], Path(argv[2]), Path(argv[3])
    names = scored(requirements)
    rows = [(name, *verdict(results, name)) for name in names]
    print(f"| {revision} scenario | result | reason |")
    print("| --- | --- | --- |")
    for name, ok, why in rows:
        print(f"| {name} | {'pass' if ok else 'FAIL'} | {why.replace('|', '/')} |")
    passing = sum(ok for _, ok, _ in rows)
    print(f"\nMCP conformance {revision}: {passing}/{len(rows)} scored client scenarios pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
