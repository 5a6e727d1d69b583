"""Which calls need a person's approval, and who may decide (pure)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from permissions import RoleConfig
from permissions.approval import (
    ApprovalConfig,
    approval_reasons,
    exempt_roles,
    may_decide,
    needs_approval,
)
from tools.definition import Tool
from tools.hints import ToolHints
from tools.mcp.config import McpServerConfig
from tools.mcp.remote_tools import approval_reason
from tools.mcp.remote_tools import needs_approval as mcp_needs_approval

ROLES = {
    "desk": RoleConfig(tools=["*"], approval_exempt=["place_*"]),
    "trader": RoleConfig(default=True, tools=["*"]),
}


async def _run(arguments: dict[str, object]) -> str:
    return "ran"


def a_tool(name: str, confirm: bool = False) -> Tool:
    return Tool(name=name, description="d", parameters={}, invoke=_run, confirm=confirm)


def test_marked_tools_and_config_globs_need_approval_unless_a_held_role_exempts() -> None:
    config = ApprovalConfig(tools=["create_*", "!create_note"])
    order, intent = a_tool("place_order", confirm=True), a_tool("create_intent")
    assert needs_approval(order, config, ROLES, ["trader"])
    assert not needs_approval(order, config, ROLES, ["trader", "desk"])
    assert needs_approval(intent, config, ROLES, ["trader"])
    assert not needs_approval(a_tool("create_note"), config, ROLES, ["trader"])  # "!" denies
    assert not needs_approval(a_tool("get_price"), config, ROLES, ["trader"])
    assert needs_approval(intent, config, ROLES, ["desk"])  # not exempt there
    # Why, in words for `slack-agent tools`, and who runs it unasked.
    assert approval_reasons(order, config) == ["confirm=True"]
    assert approval_reasons(intent, ApprovalConfig(tools=["create_*", "*_intent"])) == [
        'approval.tools: "create_*", "*_intent"'
    ]
    assert approval_reasons(a_tool("get_price"), config) == []
    assert exempt_roles("place_order", ROLES) == ["desk"] and exempt_roles("x", ROLES) == []


WRITES_DEFAULT = (
    "MCP annotations do not say readOnlyHint: true (approval: writes)"  # what the listing says
)
CONTRADICTION = "MCP annotations say both readOnlyHint and destructiveHint (contradictory)"
MAY_DESTROY = "MCP annotations do not say destructiveHint: false (approval: destructive)"
ALWAYS = "the server's approval: always"


@pytest.mark.parametrize(
    ("hints", "approval", "reason"),
    [
        # writes (the default): every tool not marked readOnlyHint: true asks.
        (ToolHints(), "writes", WRITES_DEFAULT),  # says nothing: may change things
        (ToolHints(read_only=True), "writes", None),
        (ToolHints(read_only=True, destructive=False), "writes", None),
        (ToolHints(read_only=False), "writes", WRITES_DEFAULT),
        (ToolHints(destructive=False), "writes", WRITES_DEFAULT),  # create_directory's case
        (ToolHints(read_only=False, destructive=False), "writes", WRITES_DEFAULT),
        (ToolHints(destructive=True), "writes", WRITES_DEFAULT),
        (ToolHints(read_only=True, destructive=True), "writes", CONTRADICTION),  # fail closed
        (ToolHints(idempotent=True, open_world=False), "writes", WRITES_DEFAULT),
        # destructive (an opt-in): only tools that may destroy ask.
        (ToolHints(), "destructive", MAY_DESTROY),  # says nothing: may destroy
        (ToolHints(read_only=True), "destructive", None),
        (ToolHints(read_only=True, destructive=False), "destructive", None),
        (ToolHints(read_only=False), "destructive", MAY_DESTROY),
        (ToolHints(destructive=False), "destructive", None),
        (ToolHints(read_only=False, destructive=False), "destructive", None),
        (ToolHints(destructive=True), "destructive", MAY_DESTROY),
        (ToolHints(read_only=True, destructive=True), "destructive", CONTRADICTION),
        # always and never: the admin's word alone.
        (ToolHints(), "always", ALWAYS),
        (ToolHints(read_only=True), "always", ALWAYS),
        (ToolHints(read_only=True, destructive=True), "always", ALWAYS),
        (ToolHints(), "never", None),
        (ToolHints(destructive=True), "never", None),
        (ToolHints(read_only=True, destructive=True), "never", None),
    ],
)
def test_mcp_annotations_only_add_approval_to_the_servers_setting(
    hints: ToolHints, approval: str, reason: str | None
) -> None:
    assert approval_reason(hints, approval) == reason  # type: ignore[arg-type]
    assert mcp_needs_approval(hints, approval) is (reason is not None)  # type: ignore[arg-type]


def test_a_server_says_writes_unless_its_admin_opts_in() -> None:
    assert McpServerConfig(command="x").approval == "writes"
    assert McpServerConfig(command="x", approval="destructive").approval == "destructive"
    with pytest.raises(ValidationError, match="approval"):
        McpServerConfig(command="x", approval="reads")


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
