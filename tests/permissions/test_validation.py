from __future__ import annotations

from permissions import RoleConfig
from permissions.validation import role_errors, unmatched_patterns

TOOLS = ["get_time", "calculate", "search_materials"]


def test_good_roles_have_no_errors() -> None:
    roles = {
        "admin": RoleConfig(admin=True, members=["U0ADMIN", "S0OPS", "W0ENTERPRISE"], tools=["*"]),
        "member": RoleConfig(default=True, tools=["get_time", "!calculate"]),
    }
    assert role_errors(roles) == [] and unmatched_patterns(roles, TOOLS) == []
    assert role_errors({}) == []


def test_errors_name_the_key() -> None:
    roles = {
        "clerk": RoleConfig(members=["alice", "U0CLERK"], tools=["search_*", "serch_payroll"]),
    }
    assert role_errors(roles) == [
        "roles: no role has `default: true`; one must, for everyone who matches no other role",
        "roles.clerk.members[0]: 'alice' is not a Slack user ID (U… or W…) or user-group ID (S…)",
    ]


def test_patterns_that_match_no_tool_are_warnings_that_say_what_they_do() -> None:
    """Not errors (start-up goes on): an allow that matches nothing allows nothing, a deny
    that matches nothing denies nothing."""
    roles = {
        "staff": RoleConfig(tools=["search_*", "get_inventory_stats", "!search_payroll"]),
        "member": RoleConfig(default=True, tools=["get_time"]),
    }
    assert role_errors(roles) == []
    assert unmatched_patterns(roles, ["get_time", "calculate"]) == [
        "roles.staff.tools[0]: 'search_*' matches no tool (tools: calculate, get_time); "
        "it allows nothing",
        "roles.staff.tools[1]: 'get_inventory_stats' matches no tool (tools: calculate, "
        "get_time); it allows nothing",
        "roles.staff.tools[2]: '!search_payroll' matches no tool (tools: calculate, get_time); "
        "it denies nothing",
    ]
    assert unmatched_patterns(roles, ["search_payroll", "search_x", "get_inventory_stats"]) == [
        "roles.member.tools[0]: 'get_time' matches no tool "
        "(tools: get_inventory_stats, search_payroll, search_x); it allows nothing"
    ]
