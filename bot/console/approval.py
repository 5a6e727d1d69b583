"""Who approves, at the console, a tool call that needs a person's approval (the same rule
as in Slack: ``Policy.guarded``): the person at the terminal (y/N), or everyone (``--yes``,
for scripts), when ``approval.approvers`` lets them decide as the requester. Reading from a
pipe without ``--yes`` nobody can be asked, and such calls are refused; the model reads why.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from bot.console.lines import LineReader
from tools.approval import Approved, Approver, Refused, Verdict
from tools.definition import Tool

NEEDS_CONFIRMATION = "NeedsConfirmation"  # the error kind when nobody here may say yes


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


async def nobody_at_a_terminal(tool: Tool, arguments: dict[str, Any]) -> Verdict:
    return Refused(
        f"{tool.name} needs a person's approval, and nobody can be asked: the console reads "
        "from a pipe, not a terminal (run it on a terminal to be asked, or with --yes). "
        "It did not run.",
        NEEDS_CONFIRMATION,
    )


async def not_an_approver(tool: Tool, arguments: dict[str, Any]) -> Verdict:
    return Refused(
        f"{tool.name} needs a person's approval, and the console's person may not give it "
        "(approval.approvers). It did not run.",
        NEEDS_CONFIRMATION,
    )


def console_approver(
    interactive: bool, yes: bool, may_decide: bool, lines: LineReader, err: TextIO
) -> Approver:
    if not may_decide:
        return not_an_approver
    if yes:
        return approve_all
    if not interactive:
        return nobody_at_a_terminal
    return TerminalApprover(lines, err)
