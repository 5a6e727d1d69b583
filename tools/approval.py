"""A person's approval before a call runs, as a wrapper toolset.

``ApprovalToolset(inner, approver)`` hands out each tool that needs approval with an
``invoke`` that asks ``approver`` first and runs only on a yes; while the person is asked,
the call's timeout does not run. The copy it hands out no longer says ``confirm``: the
requirement is met here. The agent loop refuses any call whose tool still says ``confirm``
when it runs (it was never wrapped), so a surface that cannot ask fails closed.

Without an approver (nobody can be asked here) a call that needs approval is refused.
Which tools need approval is ``needs_approval`` (by default the tool's ``confirm`` flag).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tools.call_context import current_call
from tools.definition import Tool
from tools.errors import NotApproved
from tools.toolset import Toolset

# True when the person approves running the tool with these arguments.
Approver = Callable[[Tool, dict[str, Any]], Awaitable[bool]]
NeedsApproval = Callable[[Tool], bool]


def marked_confirm(tool: Tool) -> bool:
    return tool.confirm


class ApprovalToolset:
    def __init__(
        self,
        inner: Toolset,
        approver: Approver | None,
        needs_approval: NeedsApproval = marked_confirm,
    ) -> None:
        self.inner = inner
        self.approver = approver
        self.needs_approval = needs_approval

    async def list_tools(self) -> Sequence[Tool]:
        return await self.inner.list_tools()

    async def get_tool(self, name: str) -> Tool:
        tool = await self.inner.get_tool(name)
        if not self.needs_approval(tool):
            return tool
        approver, invoke = self.approver, tool.invoke

        async def invoke_when_approved(arguments: dict[str, Any]) -> Any:
            if approver is None:
                raise NotApproved.nobody_to_ask(tool.name)
            call = current_call()
            with call.clock_stopped() if call is not None else contextlib.nullcontext():
                approved = await approver(tool, arguments)
            if not approved:
                raise NotApproved.declined(tool.name)
            return await invoke(arguments)

        return tool.replace(invoke=invoke_when_approved, confirm=False)
