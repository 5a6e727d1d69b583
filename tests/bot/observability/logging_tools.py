"""A tool that logs while it runs, for the tests of the log fields."""

from __future__ import annotations

import logging

from tools import tool

log = logging.getLogger("tests.logging_tools")


@tool
async def look_up(item: str) -> str:
    """Look up an item (and say so in the log)."""
    log.info("looking something up")
    log.debug("looking up %s", item)
    return f"{item}: 3 left"
