"""What a tool says about itself (MCP tool annotations), for people to read.

These are hints from the tool's author, never a guarantee: the bot shows them (``slack-agent
tools``, ``/agent tools all``), uses ``read_only``/``idempotent`` to decide whether a call cut
off by a crash may run again (never one a person approved), and ``read_only``/``destructive``
to decide whether to ask a person first (tools/mcp/remote_tools.py ``approval_reason``): by
default (``approval: writes``) every tool not marked ``readOnlyHint: true`` asks, and one
marked both read-only and destructive asks too (contradictory: fail closed); only a server
whose admin set ``approval: destructive`` lets ``destructiveHint: false`` run unasked.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolHints:
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def labels(self) -> list[str]:
        """What was said, in words: ``read-only``, ``destructive`` or ``non-destructive``,
        ``idempotent``, ``open-world`` or ``closed-world``."""
        labels = []
        if self.read_only:
            labels.append("read-only")
        if self.destructive is not None:
            labels.append("destructive" if self.destructive else "non-destructive")
        if self.idempotent:
            labels.append("idempotent")
        if self.open_world is not None:
            labels.append("open-world" if self.open_world else "closed-world")
        return labels

    def as_json(self) -> dict[str, bool]:
        """The hints that were given, by their MCP names."""
        given = {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }
        return {key: value for key, value in given.items() if value is not None}
