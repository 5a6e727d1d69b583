"""Start-up checks of the ``roles:`` section against the tools that exist."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from permissions.config import RoleConfig
from permissions.patterns import matches_any

_MEMBER = re.compile(r"^[UWS][A-Z0-9]{2,}$")


def role_errors(
    roles: Mapping[str, RoleConfig], tool_names: Collection[str], *, check_patterns: bool = True
) -> list[str]:
    """Every problem, each naming its key; empty when the roles are fine.

    ``check_patterns=False`` leaves out patterns that match no tool (with MCP servers, their
    tools are only known once the servers have listed them: see :func:`unmatched_patterns`).
    """
    if not roles:
        return []
    errors = []
    if not any(role.default for role in roles.values()):
        errors.append(
            "roles: no role has `default: true`; one must, for everyone who matches no other role"
        )
    for name, role in roles.items():
        for index, member in enumerate(role.members):
            if not _MEMBER.match(member):
                errors.append(
                    f"roles.{name}.members[{index}]: {member!r} is not a Slack user ID "
                    "(U… or W…) or user-group ID (S…)"
                )
    if check_patterns:
        errors.extend(unmatched_patterns(roles, tool_names))
    return errors


def unmatched_patterns(roles: Mapping[str, RoleConfig], tool_names: Collection[str]) -> list[str]:
    known = ", ".join(sorted(tool_names)) or "none"
    return [
        f"roles.{name}.tools[{index}]: {pattern!r} matches no tool (tools: {known})"
        for name, role in roles.items()
        for index, pattern in enumerate(role.tools)
        if not matches_any(pattern, tool_names)
    ]
