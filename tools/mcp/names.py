"""Which server owns each tool name, when several offer the same one (pure).

At start-up two servers offering one name is a configuration error (a prefix separates
them). Later, when a server lists a name another server already owns, the first keeps it
and the newer one is left out. A server keeps its names while it is away, so a call that
arrives then is answered "unavailable", not sent to another server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SHOWN_NAMES = 10


@dataclass(frozen=True)
class Clash:
    name: str
    kept: str  # the server that keeps the name
    left_out: str  # the server whose tool is not offered


def assign(
    claims: Mapping[str, str], offered: Mapping[str, Sequence[str]]
) -> tuple[dict[str, str], list[Clash]]:
    """New owners: a claim stays while its server still lists the name; an unowned name
    goes to the first server (in ``offered``'s order) that lists it."""
    kept = {name: server for name, server in claims.items() if name in offered.get(server, ())}
    clashes: list[Clash] = []
    for server, names in offered.items():
        for name in names:
            owner = kept.setdefault(name, server)
            if owner != server:
                clashes.append(Clash(name, owner, server))
    return kept, clashes


def clash_message(clashes: Sequence[Clash]) -> str:
    """A start-up error naming both servers of each clash and suggesting a prefix."""
    by_pair: dict[tuple[str, str], list[str]] = {}
    for clash in clashes:
        by_pair.setdefault((clash.kept, clash.left_out), []).append(clash.name)
    lines = []
    for (first, second), names in by_pair.items():
        shown = ", ".join(sorted(names)[:SHOWN_NAMES])
        more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
        word = "a tool" if len(names) == 1 else f"{len(names)} tools"
        lines.append(
            f"MCP servers {first} and {second} both offer {word} named {shown}{more}; "
            f'give one of them a prefix, e.g. mcp.servers.{second}.prefix: "{second}_"'
        )
    return "\n".join(lines)
