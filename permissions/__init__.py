"""Who may do what: roles from four sources, tool patterns, channel limits, admin switches."""

from permissions.config import RoleConfig
from permissions.patterns import allows, denies
from permissions.policy import Person, Policy, PolicyToolset
from permissions.resolver import RoleResolver
from permissions.rules import is_admin, roles_allowing, tool_allowed
from permissions.sources import HeldRole

__all__ = [
    "HeldRole",
    "Person",
    "Policy",
    "PolicyToolset",
    "RoleConfig",
    "RoleResolver",
    "allows",
    "denies",
    "is_admin",
    "roles_allowing",
    "tool_allowed",
]
