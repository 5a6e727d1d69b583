"""What `slack-agent tools` shows of each tool (pure): its row for ``--json`` and its lines for
people, with who may use it and whether its calls wait for a person's approval, and why,
asked of the same rules the turns run by (``permissions/rules.py``, ``permissions/approval.py``).
An MCP server that signs each person in shows as such, with the tools offered to a person
who has not connected (``personal_lines``); what each person gets once connected is theirs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from permissions.approval import ApprovalConfig, approval_reasons, exempt_roles
from permissions.config import RoleConfig
from permissions.rules import who_may_use
from tools.definition import Tool


@dataclass(frozen=True)
class ApprovalShown:
    """Whether a tool's calls wait for a person's approval, as the listing says it."""

    why: list[str]  # empty: its calls never wait
    exempt_roles: list[str]  # roles whose holders run it unasked

    @property
    def needed(self) -> bool:
        """Its calls wait, for whoever holds none of ``exempt_roles``."""
        return bool(self.why)

    def as_json(self) -> dict[str, Any]:
        return {"needed": self.needed, "why": self.why, "exempt_roles": self.exempt_roles}

    def line(self) -> str | None:
        if not self.needed:
            return None
        exempt = f"; unasked for roles: {', '.join(self.exempt_roles)}" if self.exempt_roles else ""
        return f"    needs approval: {'; '.join(self.why)}{exempt}"


def approval_shown(
    tool: Tool, approval: ApprovalConfig, roles: Mapping[str, RoleConfig]
) -> ApprovalShown:
    why = approval_reasons(tool, approval)
    return ApprovalShown(why, exempt_roles(tool.name, roles) if why else [])


def tool_row(
    tool: Tool, approval: ApprovalConfig, roles: Mapping[str, RoleConfig]
) -> dict[str, Any]:
    """One tool as ``slack-agent tools --json`` prints it."""
    return {
        "name": tool.name,
        "remote_name": tool.remote_name,
        "title": tool.title,
        "source": tool.source,
        "description": tool.description,
        "annotations": tool.hints.as_json(),
        "parameters": tool.parameters,
        "output_schema": tool.output_schema,
        "timeout_s": tool.timeout_s,
        "confirm": tool.confirm,
        "per_person": tool.per_person,
        "approval": approval_shown(tool, approval, roles).as_json(),
        "roles": who_may_use(tool.name, roles),
    }


def tool_lines(tool: Tool, approval: ApprovalConfig, roles: Mapping[str, RoleConfig]) -> list[str]:
    """One tool as ``slack-agent tools`` prints it for people."""
    shown = approval_shown(tool, approval, roles)
    flags = " (needs approval)" if shown.needed else ""
    title = f" — {tool.title}" if tool.title and tool.title != tool.name else ""
    lines = [
        f"{tool.name}{title}  [{tool.source}]{flags}",
        f"    {tool.description.splitlines()[0] if tool.description else ''}",
    ]
    hints = tool.hints.labels()
    if hints:
        lines.append(f"    annotations: {', '.join(hints)}")
    if shown.line():
        lines.append(str(shown.line()))
    if tool.remote_name and tool.remote_name != tool.name:
        lines.append(f"    name on the server: {tool.remote_name}")
    lines.append(f"    roles: {', '.join(who_may_use(tool.name, roles)) or 'none'}")
    lines.append(f"    parameters: {json.dumps(tool.parameters)}")
    if tool.output_schema:
        lines.append(f"    returns: {json.dumps(tool.output_schema)}")
    return lines


def signs_in(server: str) -> str:
    """How a server that signs each person in is introduced, in words."""
    return f"signs each person in: connect with `/agent connect {server}`"


def personal_lines(server: str, offered: Sequence[str]) -> list[str]:
    """A server that signs each person in, as `slack-agent tools` prints it: then each tool
    offered to a person who has not connected (its lines follow, from ``tool_lines``)."""
    return [
        f"MCP server {server}: {signs_in(server)}",
        f"    offered until then: {', '.join(offered) or 'nothing'}",
    ]
