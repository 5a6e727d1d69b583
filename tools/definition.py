"""The tool model: what a tool is, and the ``@tool`` decorator that makes one."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, overload

from pydantic import ValidationError

from tools.docstrings import parse_docstring
from tools.errors import ToolArgumentsError, ToolDefinitionError
from tools.hints import ToolHints
from tools.preview import ArgumentsPreview
from tools.schema import ToolArguments, arguments_model, json_schema

Invoker = Callable[[dict[str, Any]], Awaitable[Any]]
# Checks a call's arguments without running it: raises ToolArgumentsError when they do not
# fit the tool's schema (or another ToolError saying what is wrong with them). It may be a
# coroutine function when checking needs to ask something (a person's time zone).
ArgumentsCheck = Callable[[dict[str, Any]], Awaitable[None] | None]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# Sync handlers run here rather than in asyncio's default pool, which has only
# cpu_count + 4 threads: 16 parallel sync tools on a 2-core box would queue.
_SYNC_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="tool")
_busy = 0  # sync handlers running in the pool now
_busy_lock = threading.Lock()


def busy_sync_tools() -> int:
    """How many sync tool handlers are running in the pool right now. A process that is
    shutting down uses it to exit without waiting for a stuck one."""
    return _busy


def _counted(call: Callable[[], Any]) -> Any:
    global _busy
    with _busy_lock:
        _busy += 1
    try:
        return call()
    finally:
        with _busy_lock:
            _busy -= 1


def check_name(name: str) -> None:
    """Chat Completions accepts 1-64 letters, digits, '_' and '-' as a function name."""
    if not _NAME.match(name):
        raise ToolDefinitionError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")


class Tool:
    """A callable the model may ask for.

    ``invoke`` takes the model's arguments (already JSON-decoded), validates them and runs
    the handler. Python tools get that from ``@tool``; other sources (MCP) pass their own.
    ``check`` validates the arguments alone, without running anything (``check_arguments``),
    so a call can be refused before a person is asked to approve it.

    ``per_person``: it runs as the person who calls it, with their own connection (a tool
    of an MCP server that signs each person in): what it returns is theirs alone.

    ``preview``: what a person asked to approve a call reads of it besides its arguments
    (``tools/preview.py``), asked after ``check`` passed.

    ``confirm``: the tool itself asks for a person's approval (``confirm_reason`` says why, in
    words for people: ``confirm=True``, or what an MCP server's annotations and setting
    said). ``idempotent``: safe to run again when a worker died mid-call; when not given it
    is ``not confirm`` (a call that needs approval is never run twice on its own).
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        parameters: dict[str, Any],
        invoke: Invoker,
        timeout_s: float | None = None,
        confirm: bool = False,
        idempotent: bool | None = None,
        source: str = "python",
        fn: Callable[..., Any] | None = None,
        title: str | None = None,
        hints: ToolHints | None = None,
        output_schema: dict[str, Any] | None = None,
        remote_name: str | None = None,
        check: ArgumentsCheck | None = None,
        confirm_reason: str | None = None,
        per_person: bool = False,
        preview: ArgumentsPreview | None = None,
    ) -> None:
        check_name(name)
        if timeout_s is not None and timeout_s <= 0:
            raise ToolDefinitionError(f"tool {name!r}: timeout must be positive")
        self.name = name
        self.description = description
        self.parameters = parameters
        self.invoke = invoke
        self.timeout_s = timeout_s
        self.confirm = confirm
        # Why it asks for approval, for people to read (only while ``confirm``).
        self.confirm_reason = (confirm_reason or "confirm=True") if confirm else None
        # Safe to run again when a worker died mid-call (at most once). False: the model is
        # told that the interrupted call's outcome is unknown instead. A tool that asks for
        # approval is not, unless its author says so.
        self.idempotent = (not confirm) if idempotent is None else idempotent
        self.check = check
        self.source = source
        self.fn = fn
        self.title = title  # a name for people (MCP tools may have one)
        self.hints = hints or ToolHints()
        self.output_schema = output_schema  # the shape of its structured result, if declared
        # The name its source knows it by (an MCP server's own name), when it has one.
        self.remote_name = remote_name
        # It runs as its person (an MCP server that signs each person in): its results are
        # that person's alone, whoever else may use a tool of that name.
        self.per_person = per_person
        self.preview = preview  # what an approval card shows of a call, besides its arguments

    def spec(self) -> dict[str, Any]:
        """The Chat Completions ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def check_arguments(self, arguments: dict[str, Any]) -> None:
        """Raise :class:`ToolArgumentsError` when ``arguments`` do not fit the tool's schema
        (or the tool's own :class:`~tools.errors.ToolError` saying what is wrong); nothing
        runs. A tool whose source gives no check passes (its ``invoke`` decides)."""
        if self.check is not None:
            checked = self.check(arguments)
            if checked is not None:
                await checked

    def with_source(self, source: str) -> Tool:
        return self.replace(source=source)

    def replace(self, **changes: Any) -> Tool:
        """A copy with ``changes`` (keyword arguments of the constructor) applied."""
        fields: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "invoke": self.invoke,
            "timeout_s": self.timeout_s,
            "confirm": self.confirm,
            "idempotent": self.idempotent,
            "source": self.source,
            "fn": self.fn,
            "title": self.title,
            "hints": self.hints,
            "output_schema": self.output_schema,
            "remote_name": self.remote_name,
            "check": self.check,
            "confirm_reason": self.confirm_reason,
            "per_person": self.per_person,
            "preview": self.preview,
        }
        fields.update(changes)
        return Tool(**fields)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the original function directly (handy in tests)."""
        if self.fn is None:
            raise TypeError(f"tool {self.name!r} has no Python function to call")
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, source={self.source!r})"


def python_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    confirm: bool = False,
    idempotent: bool | None = None,
) -> Tool:
    """Make a :class:`Tool` from a sync or async function."""
    tool_name = name or fn.__name__
    check_name(tool_name)
    doc = parse_docstring(fn.__doc__)
    model = arguments_model(fn, tool_name, doc.params)
    text = description if description is not None else doc.description
    if not text:
        raise ToolDefinitionError(
            f"tool {tool_name!r} needs a description: add a docstring or description=..."
        )
    module = getattr(fn, "__module__", None) or "python"
    return Tool(
        name=tool_name,
        description=text,
        parameters=json_schema(model),
        invoke=_invoker(fn, tool_name, model),
        timeout_s=timeout,
        confirm=confirm,
        idempotent=idempotent,
        source=module,
        fn=fn,
        check=_checker(tool_name, model),
        confirm_reason="@tool(confirm=True)" if confirm else None,
    )


def _parsed(tool_name: str, model: type[ToolArguments], arguments: dict[str, Any]) -> ToolArguments:
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise ToolArgumentsError.from_pydantic(tool_name, exc.errors()) from None


def _checker(tool_name: str, model: type[ToolArguments]) -> ArgumentsCheck:
    def check(arguments: dict[str, Any]) -> None:
        _parsed(tool_name, model, arguments)

    return check


def _invoker(fn: Callable[..., Any], tool_name: str, model: type[ToolArguments]) -> Invoker:
    is_async = inspect.iscoroutinefunction(fn)

    async def invoke(arguments: dict[str, Any]) -> Any:
        parsed = _parsed(tool_name, model, arguments)
        kwargs = {field: getattr(parsed, field) for field in type(parsed).model_fields}
        if is_async:
            return await fn(**kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_SYNC_POOL, _counted, functools.partial(fn, **kwargs))

    return invoke


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    confirm: bool = False,
    idempotent: bool | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    confirm: bool = False,
    idempotent: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a tool: ``@tool`` or ``@tool(name=..., timeout=..., confirm=...)``.

    The name comes from the function, the description from its docstring, and the JSON
    schema from its type hints (pydantic). ``Args:`` lines describe each parameter.
    ``timeout`` is in seconds (default: ``llm.tool_timeout_s``); ``confirm=True`` marks a
    tool that needs a person's confirmation before it runs. ``idempotent=False`` marks a
    tool that must not run again by itself when its worker died mid-call (the model is
    told the outcome is unknown instead); it is the default for ``confirm=True`` tools
    unless ``idempotent=True`` is given. A call a person approved runs at most once on
    that approval whatever ``idempotent`` says (the surface's approver counts its runs).
    """

    def wrap(func: Callable[..., Any]) -> Tool:
        return python_tool(
            func,
            name=name,
            description=description,
            timeout=timeout,
            confirm=confirm,
            idempotent=idempotent,
        )

    if fn is not None:
        return wrap(fn)
    return wrap
