"""Which calls need a person's approval, and who may decide (pure)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from permissions import RoleConfig
from permissions.approval import ApprovalConfig, may_decide, needs_approval
from tools.hints import ToolHints
from tools.mcp.remote_tools import needs_approval as mcp_needs_approval

ROLES = {
    "desk": RoleConfig(tools=["*"], approval_exempt=["place_*"]),
    "trader": RoleConfig(default=True, tools=["*"]),
}


def test_marked_tools_and_config_globs_need_approval_unless_a_held_role_exempts() -> None:
    config = ApprovalConfig(tools=["create_*", "!create_note"])
    assert needs_approval("place_order", True, config, ROLES, ["trader"])
    assert not needs_approval("place_order", True, config, ROLES, ["trader", "desk"])
    assert needs_approval("create_intent", False, config, ROLES, ["trader"])
    assert not needs_approval("create_note", False, config, ROLES, ["trader"])  # "!" denies
    assert not needs_approval("get_price", False, config, ROLES, ["trader"])
    assert needs_approval("create_intent", False, config, ROLES, ["desk"])  # not exempt there


@pytest.mark.parametrize(
    ("hints", "approval", "needed"),
    [
        (ToolHints(), "destructive", True),  # says nothing: may change and destroy
        (ToolHints(read_only=True), "destructive", False),
        (ToolHints(read_only=True, destructive=True), "destructive", False),
        (ToolHints(destructive=True), "destructive", True),
        (ToolHints(read_only=False, destructive=False), "destructive", False),  # additive
        (ToolHints(read_only=True), "always", True),  # the admin's word wins
        (ToolHints(destructive=True), "never", False),
    ],
)
def test_mcp_annotations_by_the_specs_defaults_and_the_servers_setting(
    hints: ToolHints, approval: str, needed: bool
) -> None:
    assert mcp_needs_approval(hints, approval) is needed  # type: ignore[arg-type]


def test_who_may_decide() -> None:
    default = ApprovalConfig()
    assert may_decide(default, is_requester=True, is_admin=False, held=[])
    assert may_decide(default, is_requester=False, is_admin=True, held=[])
    assert not may_decide(default, is_requester=False, is_admin=False, held=["trader"])
    risk = ApprovalConfig(approvers=["role:risk"])
    assert not may_decide(risk, is_requester=True, is_admin=True, held=[])
    assert may_decide(risk, is_requester=False, is_admin=False, held=["risk"])


def test_approvers_are_checked_at_start_up() -> None:
    with pytest.raises(ValidationError, match="unknown approver"):
        ApprovalConfig(approvers=["boss"])
    with pytest.raises(ValidationError, match="at least one approver"):
        ApprovalConfig(approvers=[])
