from __future__ import annotations

import pytest

from permissions import RoleConfig, allows, denies, roles_allowing, tool_allowed
from permissions.patterns import matches_any

WAREHOUSE = ["search_*", "get_inventory_stats", "!search_payroll"]


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("search_materials", True),
        ("get_inventory_stats", True),
        ("search_payroll", False),  # the deny wins over search_*
        ("create_new_intent", False),
        ("Search_materials", False),  # names are case-sensitive
    ],
)
def test_globs_and_denies(name: str, allowed: bool) -> None:
    assert allows(WAREHOUSE, name) is allowed


def test_deny_wins_wherever_it_is_written() -> None:
    assert not allows(["!search_payroll", "*"], "search_payroll")
    assert allows(["!search_payroll", "*"], "anything_else")
    assert not allows([], "anything")
    assert denies(["!x*"], "xy") and not denies(["x*"], "xy")
    assert matches_any("!search_*", ["search_a"]) and not matches_any("zz*", ["search_a"])


ROLES = {
    "admin": RoleConfig(admin=True, members=["U0ADMIN"], tools=["*"]),
    "warehouse_staff": RoleConfig(members=["S0WAREHOUSE"], tools=WAREHOUSE),
    "member": RoleConfig(
        default=True, tools=["get_time", "calculate"], channels=["D*", "C0GENERAL"]
    ),
}


def test_the_union_of_roles() -> None:
    both = ["warehouse_staff", "member"]
    assert tool_allowed(both, ROLES, "calculate", "D123")
    assert tool_allowed(both, ROLES, "search_materials", "D123")
    assert not tool_allowed(["warehouse_staff"], ROLES, "calculate", "D123")
    assert not tool_allowed(["ghost"], ROLES, "calculate", None)


def test_a_deny_in_any_role_wins_over_another_roles_allow() -> None:
    assert tool_allowed(["admin"], ROLES, "search_payroll", None)
    assert not tool_allowed(["admin", "warehouse_staff"], ROLES, "search_payroll", None)


def test_channel_limits() -> None:
    assert tool_allowed(["member"], ROLES, "get_time", "D0ALICE")
    assert tool_allowed(["member"], ROLES, "get_time", "C0GENERAL")
    assert not tool_allowed(["member"], ROLES, "get_time", "C0RANDOM")
    assert tool_allowed(["member"], ROLES, "get_time", None)  # "anywhere": Home tab


def test_which_roles_allow_a_tool() -> None:
    assert roles_allowing("search_materials", ROLES) == ["admin", "warehouse_staff"]
    assert roles_allowing("search_payroll", ROLES) == ["admin"]
