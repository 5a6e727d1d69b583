"""Which roles a person holds, from the config alone (user IDs and the default role).

User groups, workspace admins and grants made in Slack join this when the Slack app lands.
"""

from __future__ import annotations

from collections.abc import Mapping

from permissions.config import RoleConfig
from permissions.patterns import allows


def roles_from_config(user_id: str | None, roles: Mapping[str, RoleConfig]) -> list[str]:
    """Roles naming ``user_id`` as a member; the default role when none does."""
    held = [name for name, role in roles.items() if user_id and user_id in role.members]
    if held:
        return held
    return [name for name, role in roles.items() if role.default]


def role_allows(role_names: list[str], roles: Mapping[str, RoleConfig], tool_name: str) -> bool:
    """The union of the roles' tools: one role allowing the tool is enough."""
    return any(allows(roles[name].tools, tool_name) for name in role_names if name in roles)
