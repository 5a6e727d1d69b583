"""A person's approval before a call runs, as a wrapper toolset.

``ApprovalToolset(inner, approver)`` hands out each tool that needs approval with an
``invoke`` that first checks the arguments against the tool's schema (an invalid call is a
``ToolArgumentsError`` the model reads, and nobody is asked), then asks ``approver`` and runs
only when it approves; while the person is asked, the call's timeout does not run. The copy
it hands out no longer says ``confirm``: the requirement is met here. The agent loop refuses
any call whose tool still says ``confirm`` when it runs (it was never wrapped), so a surface
that cannot ask fails closed.

An approver answers :class:`Approved` or :class:`Refused` (with what the model is told), or
raises :class:`~tools.errors.CallDeferred` when the person decides later (Slack: the turn
parks until they click). Without an approver (nobody can be asked here) a call that needs
approval is refused. Which tools need approval is ``needs_approval`` (by default the tool's
``confirm`` flag; every surface passes ``Policy.needs_approval``, which adds the config's
globs and the roles' exemptions: ``Policy.guarded`` in permissions/policy.py).

A call refused before it started (:class:`~tools.errors.CallNotStarted`: an MCP server's
401 or 403, sign-in needed) was not a run: an approver that counts runs (:class:`GivesBack`,
optional) is told with ``not_started(tool)``, so the approval is not used up, and the error
passes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from tools.call_context import current_call
from tools.definition import Tool
from tools.errors import CallNotStarted, NotApproved
from tools.toolset import Toolset


@dataclass(frozen=True)
class Approved:
    pass


@dataclass(frozen=True)
class Refused:
    """Not approved; ``why`` is what the model reads ("" for a plain "declined"), ``kind``
    the error kind it reads with it."""

    why: str = ""
    kind: str = "NotConfirmed"


Verdict = Approved | Refused
Approver = Callable[[Tool, dict[str, Any]], Awaitable[Verdict]]
NeedsApproval = Callable[[Tool], Awaitable[bool]]


@runtime_checkable
class GivesBack(Protocol):
    """An approver that counts the runs of an approved call, and takes one back when the
    call was refused before it started (optional: approvers without it are fine)."""

    async def not_started(self, tool: Tool) -> None: ...


async def marked_confirm(tool: Tool) -> bool:
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
        if not await self.needs_approval(tool):
            return tool.replace(confirm=False) if tool.confirm else tool
        approver, invoke = self.approver, tool.invoke

        async def invoke_when_approved(arguments: dict[str, Any]) -> Any:
            await tool.check_arguments(arguments)  # an invalid call is nobody's to approve
            if approver is None:
                raise NotApproved.nobody_to_ask(tool.name)
            call = current_call()
            with call.clock_stopped() if call is not None else contextlib.nullcontext():
                verdict = await approver(tool, arguments)
            if isinstance(verdict, Refused):
                raise NotApproved.declined(tool.name, verdict.why, verdict.kind)
            try:
                return await invoke(arguments)
            except CallNotStarted:  # refused at the door: not a run, the approval stands
                if isinstance(approver, GivesBack):
                    await approver.not_started(tool)
                raise

        return tool.replace(invoke=invoke_when_approved, confirm=False)
