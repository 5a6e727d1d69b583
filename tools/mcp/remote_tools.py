"""A server's tool as a :class:`Tool` the model can be offered (pure).

The name gets the server's prefix and only ``[A-Za-z0-9_-]``; the arguments are checked
against the tool's JSON schema before the call, and before anyone is asked to approve it
(``Tool.check_arguments``; arguments or a schema too deep to walk are a problem with them,
not a crash); the title, the annotations and the output schema are kept for people to read.
Whether a call needs a person's approval follows the server's ``approval`` setting, and the
annotations can only add approval (:func:`approval_reason`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import jsonschema

from tools.definition import Tool
from tools.errors import ToolArgumentsError
from tools.hints import ToolHints
from tools.mcp.config import Approval

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

Call = Callable[[str, dict[str, Any]], Awaitable[str]]


def safe_name(name: str) -> str:
    """``name`` with every character other than [A-Za-z0-9_-] replaced by ``_``."""
    return _UNSAFE.sub("_", name)


def exposed_name(prefix: str, name: str) -> str:
    """The tool's name for the model: prefixed, only [A-Za-z0-9_-], at most 64 characters."""
    return safe_name(prefix + name)[:64]


def needs_tasks(remote: Any) -> bool:
    """The tool can only run as a task (``execution.taskSupport: required``), which this
    client does not speak."""
    execution = getattr(remote, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def wrap_tool(
    remote: Any,
    prefix: str,
    timeout_s: float,
    source: str,
    call: Call,
    approval: Approval = "writes",
) -> Tool:
    """``remote`` (an ``mcp_types.Tool``) as a Tool whose invocation is ``call(name, args)``;
    it needs a person's approval (``confirm``) as the server's ``approval`` setting says."""
    exposed = exposed_name(prefix, remote.name)
    schema = dict(remote.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema.pop("title", None)
    validator = _validator(schema)
    original = remote.name

    def check(arguments: dict[str, Any]) -> None:
        if validator is not None:
            problems = _problems(validator, arguments)
            if problems:
                raise ToolArgumentsError(exposed, problems)

    async def invoke(arguments: dict[str, Any]) -> Any:
        check(arguments)
        return await call(original, arguments)

    annotations = getattr(remote, "annotations", None)
    title = getattr(remote, "title", None) or getattr(annotations, "title", None)
    hints = hints_of(annotations)
    reason = approval_reason(hints, approval)
    return Tool(
        name=exposed,
        description=remote.description or title or remote.name,
        parameters=schema,
        invoke=invoke,
        timeout_s=timeout_s,
        idempotent=bool(hints.read_only or hints.idempotent),
        confirm=reason is not None,
        confirm_reason=reason,
        check=check,
        source=source,
        title=title,
        hints=hints,
        output_schema=getattr(remote, "output_schema", None),
        remote_name=original,
    )


def hints_of(annotations: Any) -> ToolHints:
    """MCP tool annotations as hints. A call cut off by a crash runs again only when the
    server says the tool reads only or is idempotent (MCP's defaults assume neither)."""
    if annotations is None:
        return ToolHints()
    return ToolHints(
        read_only=getattr(annotations, "read_only_hint", None),
        destructive=getattr(annotations, "destructive_hint", None),
        idempotent=getattr(annotations, "idempotent_hint", None),
        open_world=getattr(annotations, "open_world_hint", None),
    )


def needs_approval(hints: ToolHints, approval: Approval) -> bool:
    """Whether a server's tool needs a person's approval (:func:`approval_reason`)."""
    return approval_reason(hints, approval) is not None


def approval_reason(hints: ToolHints, approval: Approval) -> str | None:
    """Why a server's tool needs a person's approval, in words for people; None when it
    does not.

    The annotations are the server's word and untrusted (the MCP specification: a client
    must not rely on them), so they can only add approval:

    - ``writes`` (the default): every tool that does not say ``readOnlyHint: true`` asks;
    - ``destructive`` (an admin's opt-in for a server they trust to say so): only a tool
      that may destroy asks; one that says ``destructiveHint: false``, or
      ``readOnlyHint: true``, runs unasked (by the specification's defaults a tool that
      says nothing may destroy);
    - in both, a tool that says ``readOnlyHint: true`` and ``destructiveHint: true`` asks:
      the hints contradict each other, and the client fails closed;
    - ``always`` and ``never`` are the admin's word alone."""
    if approval == "always":
        return "the server's approval: always"
    if approval == "never":
        return None
    if hints.read_only is True and hints.destructive is True:
        return "MCP annotations say both readOnlyHint and destructiveHint (contradictory)"
    if hints.read_only is True:
        return None
    if approval == "writes":
        return "MCP annotations do not say readOnlyHint: true (approval: writes)"
    if hints.destructive is False:
        return None
    return "MCP annotations do not say destructiveHint: false (approval: destructive)"


def _problems(validator: Any, arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """Where the arguments break the schema; arguments (or a schema) too deep to walk are one
    problem, not an exception."""
    try:
        return [
            (".".join(str(p) for p in error.absolute_path), error.message)
            for error in validator.iter_errors(arguments)
        ]
    except RecursionError:
        return [("", "nested too deeply to check against the tool's schema")]


def _validator(schema: dict[str, Any]) -> Any:
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except jsonschema.SchemaError:
        return None  # an odd schema: leave validation to the server
