"""The rule, in one pure function: which tools a set of roles may use in a channel
(``tool_allowed``; every surface asks it: the policy for Slack and the console, and
``who_may_use`` for the listings).

- With no roles configured, everyone may use every tool.
- A person with several roles may use the union of their tools.
- ``!pattern`` denies, and a deny in any of the person's roles always wins.
- A role with ``channels`` lends its tools only in channels matching those globs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

from permissions.config import RoleConfig
from permissions.patterns import allows, denies

EVERYONE = "everyone"  # what the listings say when no roles are configured


def role_applies_in(role: RoleConfig, channel: str | None) -> bool:
    """``channel`` None means "anywhere" (the Home tab, the console)."""
    if role.channels is None or channel is None:
        return True
    return any(fnmatchcase(channel, glob) for glob in role.channels)


def tool_allowed(
    held: Iterable[str], roles: Mapping[str, RoleConfig], tool: str, channel: str | None
) -> bool:
    if not roles:
        return True  # no roles configured: every tool for everyone
    configs = [roles[name] for name in held if name in roles]
    if any(denies(role.tools, tool) for role in configs):
        return False
    return any(allows(role.tools, tool) for role in configs if role_applies_in(role, channel))


def is_admin(held: Iterable[str], roles: Mapping[str, RoleConfig]) -> bool:
    return any(roles[name].admin for name in held if name in roles)


def roles_allowing(tool: str, roles: Mapping[str, RoleConfig]) -> list[str]:
    """The roles that, held alone, may use ``tool`` somewhere."""
    return [name for name in roles if tool_allowed([name], roles, tool, None)]


def who_may_use(tool: str, roles: Mapping[str, RoleConfig]) -> list[str]:
    """For the listings: the roles that may use ``tool`` somewhere, or ``everyone`` when no
    roles are configured."""
    return roles_allowing(tool, roles) if roles else [EVERYONE]
