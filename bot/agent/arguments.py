"""A call's arguments, as the model wrote them, read into the object a tool takes (pure).

Arguments the bot cannot safely read become a refusal the model reads as the call's result,
never an exception out of the turn: larger than ``ARGUMENTS_MAX_BYTES`` (256 KB), not JSON,
not a JSON object, or nested deeper than ``MAX_DEPTH`` levels (``"[" * 100000`` would
exhaust the parser's recursion, and every reader after it: the schema checks, the approval
card, the console). A refused call's arguments are replaced, in the assistant message the
turn keeps (journal, history, the next model request, the audit, what people see), by a
small object naming the refusal: valid JSON for every server, never hundreds of KB sent again
with each round, and a call that is run again after a crash is refused the same way.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from bot.llm.response import ARGUMENTS_MAX_BYTES, ToolCall

MAX_DEPTH = 64  # levels of objects and arrays; the arguments object itself is level 1
REFUSED = "$refused"  # the key of the object that stands for refused arguments

TOO_LARGE = "ArgumentsTooLarge"
TOO_DEEP = "ArgumentsTooDeep"
INVALID_JSON = "InvalidJSON"
KINDS = (TOO_LARGE, TOO_DEEP, INVALID_JSON)


class ArgumentsRefused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object, or :class:`ArgumentsRefused`."""
    text = call.arguments.strip() or "{}"
    size = len(text) if len(text) > ARGUMENTS_MAX_BYTES else len(text.encode("utf-8", "replace"))
    if size > ARGUMENTS_MAX_BYTES:
        raise ArgumentsRefused(
            TOO_LARGE,
            f"The arguments for {call.name} are larger than {ARGUMENTS_MAX_BYTES // 1024} KB, "
            "the most one call may send. Send less: fewer or shorter values.",
        )
    too_deep = ArgumentsRefused(
        TOO_DEEP,
        f"The arguments for {call.name} are nested more than {MAX_DEPTH} levels deep. "
        "Send a flatter JSON object.",
    )
    try:
        value = json.loads(text)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:
        # A number of more than 4300 digits is a ValueError that is no JSONDecodeError.
        if isinstance(exc, json.JSONDecodeError):
            where = f" ({exc.msg} at position {exc.pos})"
        else:
            where = f" ({exc})"
        raise ArgumentsRefused(
            INVALID_JSON,
            f"The arguments for {call.name} are not valid JSON{where}. Send one JSON object.",
        ) from None
    if not isinstance(value, dict):
        raise ArgumentsRefused(
            INVALID_JSON,
            f"The arguments for {call.name} must be a JSON object, not {type(value).__name__}.",
        )
    if depth(value) > MAX_DEPTH:
        raise too_deep
    if value.get(REFUSED) in KINDS and isinstance(value.get("message"), str):
        raise ArgumentsRefused(value[REFUSED], value["message"])  # refused when it came
    return value


def screened(call: ToolCall) -> ToolCall:
    """``call`` as the turn keeps it: unchanged, or with refused arguments replaced by the
    refusal (which :func:`parse_arguments` reads back as the same refusal)."""
    try:
        parse_arguments(call)
    except ArgumentsRefused as refused:
        kept = json.dumps({REFUSED: refused.kind, "message": str(refused)}, ensure_ascii=False)
        return replace(call, arguments=kept)
    return call


def depth(value: Any) -> int:
    """How many levels of objects and arrays ``value`` has, counted without recursion (and
    no further than one past :data:`MAX_DEPTH`)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest
