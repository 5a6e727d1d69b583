"""Calling the Slack Web API where a failure must not break anything: log it, go on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)


async def safe_call(method: Callable[..., Awaitable[Any]], **kwargs: Any) -> Any:
    """Call a Slack method; a failure is logged (without the token) and gives None."""
    try:
        return await method(**kwargs)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error = getattr(getattr(exc, "response", None), "get", lambda _k: None)("error")
        channel = kwargs.get("channel")
        log.warning(
            "Slack call %s failed%s: %s",
            getattr(method, "__name__", "?"),
            f" in {channel}" if channel else "",
            error or type(exc).__name__,
        )
        return None
