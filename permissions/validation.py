"""Start-up checks of the ``roles:`` section: errors that stop start-up, and warnings.

A role that cannot work is an error (no default role, a member that is no Slack ID). A tool
pattern that matches no tool is a warning (``slack-agent check`` and the start-up log), never
a stop: an allow pattern that matches nothing allows nothing, a ``!pattern`` that matches
nothing denies nothing, and a tool may come later (an MCP server still starting, a module
added next release); so a config written ahead of its tools, like the README's, starts.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from permissions.config import RoleConfig
from permissions.patterns import matches_any

_MEMBER = re.compile(r"^[UWS][A-Z0-9]{2,}$")


def role_errors(roles: Mapping[str, RoleConfig]) -> list[str]:
    """Every problem that stops start-up, each naming its key; empty when the roles are fine
    (patterns that match no tool are warnings: :func:`unmatched_patterns`)."""
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
    return errors


def unmatched_patterns(roles: Mapping[str, RoleConfig], tool_names: Collection[str]) -> list[str]:
    """A warning for each tool pattern of a role that matches none of ``tool_names``."""
    known = ", ".join(sorted(tool_names)) or "none"
    return [
        f"roles.{name}.tools[{index}]: {pattern!r} matches no tool (tools: {known}); "
        f"it {'denies' if pattern.startswith('!') else 'allows'} nothing"
        for name, role in roles.items()
        for index, pattern in enumerate(role.tools)
        if not matches_any(pattern, tool_names)
    ]
