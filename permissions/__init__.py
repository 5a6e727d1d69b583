"""Who may use which tools. Thin for now: config roles and tool-name patterns."""

from permissions.config import RoleConfig
from permissions.patterns import allows
from permissions.roles import role_allows, roles_from_config

__all__ = ["RoleConfig", "allows", "role_allows", "roles_from_config"]
