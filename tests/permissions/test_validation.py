from __future__ import annotations

from permissions import RoleConfig
from permissions.validation import role_errors

TOOLS = ["get_time", "calculate", "search_materials"]


def test_good_roles_have_no_errors() -> None:
    roles = {
        "admin": RoleConfig(admin=True, members=["U0ADMIN", "S0OPS", "W0ENTERPRISE"], tools=["*"]),
        "member": RoleConfig(default=True, tools=["get_time", "!calculate"]),
    }
    assert role_errors(roles, TOOLS) == []
    assert role_errors({}, TOOLS) == []


def test_errors_name_the_key() -> None:
    roles = {
        "clerk": RoleConfig(members=["alice", "U0CLERK"], tools=["search_*", "serch_payroll"]),
    }
    assert role_errors(roles, TOOLS) == [
        "roles: no role has `default: true`; one must, for everyone who matches no other role",
        "roles.clerk.members[0]: 'alice' is not a Slack user ID (U… or W…) or user-group ID (S…)",
        "roles.clerk.tools[1]: 'serch_payroll' matches no tool "
        "(tools: calculate, get_time, search_materials)",
    ]
