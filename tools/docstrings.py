"""Split a docstring into the tool description and per-parameter descriptions.

Understands Google style (``Args:`` sections) and Sphinx style (``:param name: text``).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Examples?|Notes?|"
    r"Attributes|See Also|Warnings?):\s*$"
)
_GOOGLE_PARAM = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")
_SPHINX_OTHER = re.compile(r"^:(returns?|rtype|raises?|type)\b")


@dataclass(frozen=True)
class ParsedDocstring:
    description: str
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Return the free text before the first section, and the ``Args:`` descriptions."""
    if not doc:
        return ParsedDocstring("")
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    param_indent: int | None = None
    for raw in lines:
        line = raw.rstrip()
        stripped = line.strip()
        header = _SECTION.match(stripped) if not line.startswith((" ", "\t")) else None
        if header:
            section = header.group(1).lower()
            current, param_indent = None, None
            continue
        sphinx = _SPHINX_PARAM.match(stripped)
        if sphinx:
            section, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            continue
        if _SPHINX_OTHER.match(stripped):
            section, current = "sphinx-other", None
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters", "params"):
            indent = len(line) - len(line.lstrip())
            match = _GOOGLE_PARAM.match(stripped)
            if match and (param_indent is None or indent <= param_indent):
                param_indent = indent
                current = match.group(1)
                params[current] = match.group(3).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
        elif section == "sphinx" and current and stripped:
            params[current] = f"{params[current]} {stripped}".strip()
    return ParsedDocstring("\n".join(description).strip(), params)
