from __future__ import annotations

import pytest

from permissions import RoleConfig, allows, role_allows, roles_from_config

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


ROLES = {
    "admin": RoleConfig(admin=True, members=["U0ADMIN"], tools=["*"]),
    "warehouse_staff": RoleConfig(members=["U0CLERK", "U0ADMIN"], tools=WAREHOUSE),
    "member": RoleConfig(default=True, tools=["get_time", "calculate"]),
}


def test_roles_from_members_else_the_default() -> None:
    assert roles_from_config("U0ADMIN", ROLES) == ["admin", "warehouse_staff"]
    assert roles_from_config("U0CLERK", ROLES) == ["warehouse_staff"]
    assert roles_from_config("U0NOBODY", ROLES) == ["member"]
    assert roles_from_config(None, ROLES) == ["member"]


def test_the_union_of_roles() -> None:
    assert role_allows(["warehouse_staff", "member"], ROLES, "calculate")
    assert role_allows(["warehouse_staff", "member"], ROLES, "search_materials")
    assert not role_allows(["warehouse_staff"], ROLES, "calculate")
    assert not role_allows(["ghost"], ROLES, "calculate")
