"""Restricted tools whose output, error and progress carry a secret marker, for the tests
that check nothing restricted reaches a channel. ``progress_seen`` (set by the test) lets
``search_payroll`` finish once its progress was shown."""

from __future__ import annotations

import asyncio

from tools import tool
from tools.call_context import current_call
from tools.errors import ToolError

SECRET = "SECRET-PAYROLL-7431"
progress_seen: asyncio.Event | None = None  # None: search_payroll does not wait


@tool
async def search_payroll(name: str) -> str:
    """Look up someone's pay (restricted)."""
    call = current_call()
    if call is not None:
        await call.progress(1, 2, f"read {SECRET}'s ledger")
    if progress_seen is not None:
        await asyncio.wait_for(progress_seen.wait(), 10)
    return f"{SECRET}: {name} earns 7,000 a month"


@tool
def check_payroll(name: str) -> str:
    """Check someone's payroll record (restricted); fails, quoting what it saw."""
    raise ToolError(f"{SECRET}: {name}'s record is locked")
