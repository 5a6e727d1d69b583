"""Errors a tool call can end in. Each becomes a JSON result the model can read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ToolError(Exception):
    """Raise from a handler to give the model a clean, readable error.

    The message goes to the model as it is, so keep it short and useful.
    """

    kind = "ToolError"


class ToolArgumentsError(ToolError):
    """The arguments failed validation; the handler never ran."""

    kind = "InvalidArguments"

    def __init__(self, tool_name: str, problems: Sequence[tuple[str, str]]) -> None:
        self.tool_name = tool_name
        self.problems = list(problems)
        detail = "; ".join(f"{field or '(arguments)'}: {msg}" for field, msg in self.problems)
        super().__init__(f"Invalid arguments for {tool_name}: {detail}")

    @classmethod
    def from_pydantic(cls, tool_name: str, errors: Sequence[Any]) -> ToolArgumentsError:
        problems = []
        for err in errors:
            field = ".".join(str(part) for part in err.get("loc", ()))
            problems.append((field, str(err.get("msg", "invalid value"))))
        return cls(tool_name, problems)


class ToolUnavailable(ToolError):
    """The model asked for a tool it may not run here: unknown, forbidden or switched off."""

    def __init__(self, tool_name: str, kind: str, message: str) -> None:
        self.tool_name = tool_name
        self.kind = kind
        super().__init__(message)

    @classmethod
    def unknown(cls, tool_name: str) -> ToolUnavailable:
        return cls(tool_name, "UnknownTool", f"There is no tool named {tool_name!r}.")

    @classmethod
    def forbidden(cls, tool_name: str, reason: str = "") -> ToolUnavailable:
        why = f" {reason}" if reason else ""
        return cls(
            tool_name, "ToolNotAllowed", f"The tool {tool_name!r} is not available here.{why}"
        )


class NotApproved(ToolError):
    """The call needed a person's approval and did not get it."""

    def __init__(self, tool_name: str, kind: str, message: str) -> None:
        self.tool_name = tool_name
        self.kind = kind
        super().__init__(message)

    @classmethod
    def nobody_to_ask(cls, tool_name: str) -> NotApproved:
        return cls(
            tool_name,
            "NeedsConfirmation",
            f"{tool_name} needs a person's confirmation, and nobody can be asked here.",
        )

    @classmethod
    def declined(cls, tool_name: str, why: str = "", kind: str = "NotConfirmed") -> NotApproved:
        return cls(tool_name, kind, why or f"The person declined to run {tool_name}.")


class CallDeferred(Exception):
    """The call cannot run yet: it waits for something outside the turn (a person's
    decision). The turn parks, holding nothing, and runs the call when it resumes. Not a
    result: the model never reads it."""

    def __init__(self, tool_name: str, why: str) -> None:
        self.tool_name = tool_name
        super().__init__(why)


class CallNotStarted(Exception):
    """The call was refused before it started (an MCP server's 401 or 403 at the HTTP level:
    sign-in needed). Wrappers that counted the call as run give that run back
    (``ApprovalToolset``: the approval is not used up) and let it pass on."""


class ToolDefinitionError(Exception):
    """A tool is defined wrongly (bad signature, duplicate name). Raised at start-up."""
