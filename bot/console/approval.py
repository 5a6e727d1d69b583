"""Who approves, at the console, a tool call that needs a person's approval: the person at
the terminal (y/N), or everyone (``--yes``, for scripts). Reading from a pipe, nobody can
be asked and such calls are refused."""

from __future__ import annotations

import json
from typing import Any, TextIO

from bot.console.lines import LineReader
from tools.approval import Approved, Approver, Refused, Verdict
from tools.definition import Tool


class TerminalApprover:
    """Asks on the terminal: ``? run NAME {arguments} [y/N]``."""

    def __init__(self, lines: LineReader, err: TextIO) -> None:
        self.lines = lines
        self.err = err

    async def __call__(self, tool: Tool, arguments: dict[str, Any]) -> Verdict:
        self.err.write(f"  ? run {tool.name} {json.dumps(arguments)} [y/N] ")
        self.err.flush()
        answer = await self.lines.readline()
        return Approved() if answer.strip().lower() in ("y", "yes") else Refused()


async def approve_all(tool: Tool, arguments: dict[str, Any]) -> Verdict:
    return Approved()


def console_approver(
    interactive: bool, yes: bool, lines: LineReader, err: TextIO
) -> Approver | None:
    if yes:
        return approve_all
    if not interactive:
        return None  # nobody to ask: tools that need confirmation are refused
    return TerminalApprover(lines, err)
