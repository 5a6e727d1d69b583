"""Which of a server's tools are taken: its ``allow`` and ``deny`` lists (pure).

A pattern applies to the tool's names in every form: the server's own name
(``delete.everything``), the name made safe for the model without the prefix
(``delete_everything``) and the name the model sees (``wh_delete_everything``). The model
cannot tell ``delete.everything`` from ``delete_everything``, so a deny pattern is also
tried made safe the same way (``delete.*`` as ``delete_*``): whatever could reach the model
under a denied name stays out. An allow pattern is tried only as written, so it never lets
in more than one of the names it was written for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tools.mcp.remote_tools import exposed_name, safe_name
from tools.patterns import matches

# What a tool name may not hold, except the glob's own characters.
_UNSAFE_IN_PATTERN = re.compile(r"[^A-Za-z0-9_*?\[\]!-]")


def name_forms(prefix: str, name: str) -> tuple[str, ...]:
    """The server's name, the safe name without the prefix, and the name the model sees."""
    return tuple(dict.fromkeys((name, safe_name(name), exposed_name(prefix, name))))


def taken(allow: Sequence[str], deny: Sequence[str], prefix: str, name: str) -> bool:
    """Whether the server's tool ``name`` is offered: some allow pattern matches one of its
    names, and no deny pattern (as written, or made safe) matches any."""
    forms = name_forms(prefix, name)
    if not any(matches(allow, form) for form in forms):
        return False
    denied = [*deny, *(_UNSAFE_IN_PATTERN.sub("_", pattern) for pattern in deny)]
    return not any(matches(denied, form) for form in forms)
