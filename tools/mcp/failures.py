"""What went wrong with an MCP server, in words and in kind: an exception in one short line,
and whether nothing answered at the server's address, or a call broke on the transport under
the session. (Whether a server answered as a URL without a streamable HTTP endpoint does is
told by its HTTP answers: ``transports.HttpAnswers``.)
"""

from __future__ import annotations

import anyio


def describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def could_not_connect(exc: BaseException) -> bool:
    """Whether nothing answered at the server's address (refused, no route, bad name)."""
    return any(
        isinstance(item, ConnectionRefusedError) or "ConnectError" in type(item).__name__
        for item in _nested(exc)
    )


def _nested(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception inside its groups, causes and contexts."""
    found: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or any(item is seen for seen in found):
            continue
        found.append(item)
        if isinstance(item, BaseExceptionGroup):
            todo.extend(item.exceptions)
        todo.extend((item.__cause__, item.__context__))
    return found


def is_transport_failure(exc: BaseException) -> bool:
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | OSError):
        return True
    name = type(exc).__name__
    return "Connect" in name or "Transport" in name or "Network" in name or "Closed" in name
