"""One policy, whatever the surface: each case (a person, a tool) goes through every surface
as it really runs, and they must agree on whether the person may use the tool, whether
the call waits for a person's approval, and whether the person may approve.

- Slack: the worker's toolset for a turn (``bot/process/worker.slack_toolsets``), its call
  made outside any turn so that a call needing approval is refused instead of parking; and
  a signed click on an approval request, answered by the card's listener.
- The console: ``slack-agent chat``'s tools (``bot/process/commands.console_tools``) with an
  approver that notes who was asked.
- ``slack-agent tools``: the rows it prints (``bot/process/tool_listing.tool_row``), read
  for the person's role.

The cases cover a tool's own ``confirm``, an ``approval.tools`` glob, a role's
``approval_exempt``, MCP annotations under ``approval: writes`` (the default) and
``approval: destructive``, roles that may not use a tool, and admin or not.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from bot.console.chat import ChatOptions
from bot.process.commands import console_tools
from bot.process.tool_listing import tool_row
from bot.process.worker import slack_toolsets
from bot.turn.model import QueuedTurn, Turn
from permissions.approval import ApprovalConfig
from tests.fakes.deadline import NoDeadline
from tests.fakes.slack_harness import SlackHarness
from tests.fakes.slack_server import TEAM
from tools.approval import Refused, Verdict
from tools.definition import Tool
from tools.errors import NotApproved, ToolUnavailable
from tools.toolset import Toolset

Answer = Literal["runs", "asks", "forbidden"]

STDIO = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"]}
ROLE_OF = {"U0ADMIN": "admin", "U0DESK": "desk", "U0VIEW": "viewer", "U0ALICE": "trader"}
CONFIG: dict[str, Any] = {
    "tools": {"modules": ["tests.fakes.trading_tools"]},
    "slack": {"streaming": False},
    "approval": {"tools": ["get_*"], "approvers": ["admins", "role:desk"]},
    "roles": {
        "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
        "desk": {
            "members": ["U0DESK"],
            "tools": ["*"],
            "approval_exempt": ["get_*", "place_order", "wh_*"],
        },
        "viewer": {"members": ["U0VIEW"], "tools": ["get_price", "calculate", "wh_*"]},
        "trader": {"default": True, "tools": ["*"]},
    },
}
MCP: dict[str, dict[str, dict[str, Any]]] = {
    "servers": {
        # approval: writes (the default): only read-only tools run unasked.
        "warehouse": {
            **STDIO,
            "prefix": "wh_",
            "allow": ["make_directory", "count_pallets"],
        },
        # approval: destructive, an admin's opt-in: destructiveHint: false runs unasked.
        "trusted": {
            **STDIO,
            "prefix": "tr_",
            "allow": ["make_directory"],
            "approval": "destructive",
        },
        "always": {**STDIO, "prefix": "al_", "allow": ["count_pallets"], "approval": "always"},
    }
}


@dataclass(frozen=True)
class Case:
    user: str
    tool: str
    arguments: dict[str, Any]
    expected: Answer

    @property
    def id(self) -> str:
        return f"{ROLE_OF[self.user]}-{self.tool}-{self.expected}"


ORDER = {"symbol": "ACME", "quantity": 1}
CASES = [
    # A tool's own confirm=True; a role's exemption; admins are not exempt by being admins.
    Case("U0ALICE", "place_order", ORDER, "asks"),
    Case("U0DESK", "place_order", ORDER, "runs"),
    Case("U0ADMIN", "place_order", ORDER, "asks"),
    Case("U0VIEW", "place_order", ORDER, "forbidden"),  # the role may not use it at all
    # An approval.tools glob; a role's exemption from it.
    Case("U0ALICE", "get_price", {"symbol": "ACME"}, "asks"),
    Case("U0VIEW", "get_price", {"symbol": "ACME"}, "asks"),
    Case("U0DESK", "get_price", {"symbol": "ACME"}, "runs"),
    # Nothing asks for it.
    Case("U0VIEW", "calculate", {"expression": "1+1"}, "runs"),
    # MCP annotations, approval: writes (the default).
    Case("U0ALICE", "wh_count_pallets", {"aisle": 1}, "runs"),  # readOnlyHint: true
    Case("U0ALICE", "wh_make_directory", {"path": "/a"}, "asks"),  # destructiveHint: false
    Case("U0DESK", "wh_make_directory", {"path": "/b"}, "runs"),  # exempt by `wh_*`
    # approval: destructive (opted in), and always.
    Case("U0ALICE", "tr_make_directory", {"path": "/c"}, "runs"),
    Case("U0ADMIN", "al_count_pallets", {"aisle": 1}, "asks"),
]
# Every pair of annotations and server settings: tests/permissions/test_approval_rules.py.


async def slack_answer(app: SlackHarness, case: Case) -> Answer:
    assert app.services is not None and app.process is not None
    toolset_for = slack_toolsets(app.services, app.process.slack)
    turn = Turn(TEAM, "C0CHAN", "300.000001", case.user, "hi")
    tools = await toolset_for(QueuedTurn("1-0", turn), NoDeadline(), None)
    return await answer_of(tools, case)


async def console_answer(app: SlackHarness, case: Case) -> tuple[Answer, bool]:
    """What ``chat --user`` does with the call, and whether that person may approve."""
    assert app.services is not None
    asked: list[str] = []

    async def approver(tool: Tool, arguments: dict[str, Any]) -> Verdict:
        asked.append(tool.name)
        return Refused()

    console = await console_tools(app.services, ChatOptions(user=case.user))
    answer = await answer_of(console.guarded(approver, None), case)
    assert (answer == "asks") == (asked == [case.tool])
    return answer, console.may_decide


async def answer_of(tools: Toolset, case: Case) -> Answer:
    offered = [t.name for t in await tools.list_tools()]
    if case.tool not in offered:
        with pytest.raises(ToolUnavailable) as refused:
            await tools.get_tool(case.tool)  # asked again at the call: refused the same
        assert refused.value.kind == "ToolNotAllowed"
        return "forbidden"
    tool = await tools.get_tool(case.tool)
    assert not tool.confirm  # the approval wrapper stands in front of it
    try:
        await tool.invoke(case.arguments)
    except NotApproved:
        return "asks"
    return "runs"


async def listing_answer(app: SlackHarness, case: Case) -> Answer:
    """What ``slack-agent tools`` says for the case's role."""
    assert app.services is not None
    config = app.services.config
    [row] = [
        tool_row(t, config.approval, config.roles)
        for t in await app.services.registry.list_tools()
        if t.name == case.tool
    ]
    role = ROLE_OF[case.user]
    if role not in row["roles"]:
        return "forbidden"
    approval = row["approval"]
    return "asks" if approval["needed"] and role not in approval["exempt_roles"] else "runs"


async def slack_may_decide(app: SlackHarness, case: Case) -> bool:
    """A signed click on Approve by the person, on a request of their own turn."""
    turn = Turn(TEAM, "C0CHAN", "300.000001", case.user, "hi")
    request, _ = await app.state.threads.approvals.open(
        QueuedTurn("1-0", turn), f"call-{case.id}", case.tool, json.dumps(case.arguments), 60
    )
    assert await app.click("approval_approve", request.id, case.user, "300.000002") == 200
    await app.after_acks()
    decided = await app.state.threads.approvals.get(request.id)
    assert decided is not None
    return not decided.open


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_every_surface_gives_the_same_answer(slack_app: SlackHarness, case: Case) -> None:
    # Only the MCP server the case's tool comes from (each takes a while to start).
    servers = {n: s for n, s in MCP["servers"].items() if case.tool.startswith(s["prefix"])}
    mcp: dict[str, Any] = {"mcp": {"servers": servers}} if servers else {}
    app = await slack_app.start(with_worker=False, **CONFIG, **mcp)
    app.slack.users = {u: {"id": u} for u in ROLE_OF}
    slack = await slack_answer(app, case)
    console, console_decides = await console_answer(app, case)
    listing = await listing_answer(app, case)
    assert (slack, console, listing) == (case.expected,) * 3
    # Who may approve (approvers: admins, role:desk; not the requester as such).
    expected_decides = ROLE_OF[case.user] in ("admin", "desk")
    assert console_decides is expected_decides
    assert await slack_may_decide(app, case) is expected_decides


def test_the_table_covers_what_it_says() -> None:
    config = ApprovalConfig.model_validate(CONFIG["approval"])
    assert config.approvers == ["admins", "role:desk"]
    assert {c.expected for c in CASES} == {"runs", "asks", "forbidden"}
    assert {ROLE_OF[c.user] for c in CASES} == set(ROLE_OF.values())
