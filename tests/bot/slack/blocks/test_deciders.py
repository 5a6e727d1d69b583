from bot.slack.blocks.deciders import who_decides
from permissions.approval import ApprovalConfig, deciders
from permissions.config import RoleConfig

ROLES = {
    "admin": RoleConfig(admin=True, members=["U1", "S9"]),
    "ops": RoleConfig(members=["U5"], workspace_admins=True),
    "member": RoleConfig(default=True),
}


def test_the_requester_and_admins_are_named_by_default() -> None:
    found = deciders(ApprovalConfig(), ROLES)
    assert found.requester and found.admins and found.members == ("U1", "S9")
    assert who_decides(found, "U7") == "<@U7>, <@U1>, <!subteam^S9> or an admin"


def test_when_only_admins_decide_the_requester_is_not_named() -> None:
    text = who_decides(deciders(ApprovalConfig(approvers=["admins"]), ROLES), "U7")
    assert "<@U7>" not in text
    assert text == "<@U1>, <!subteam^S9> or an admin"


def test_a_named_role_brings_its_members_and_workspace_admins() -> None:
    found = deciders(ApprovalConfig(approvers=["role:ops"]), ROLES)
    assert not found.requester and not found.admins
    assert who_decides(found, "U7") == ("<@U5>, a workspace admin or anyone with the role ops")


def test_a_requester_who_is_also_a_member_is_named_once() -> None:
    found = deciders(ApprovalConfig(), ROLES)
    assert who_decides(found, "U1").count("<@U1>") == 1
