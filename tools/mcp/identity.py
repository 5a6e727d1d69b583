"""How the bot introduces itself to MCP servers (``clientInfo``): its name and version."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

import mcp_types

NAME = "slack-agent"
TITLE = "Slack agent"


@cache
def client_info() -> mcp_types.Implementation:
    try:
        installed = version(NAME)
    except PackageNotFoundError:  # run from a source tree that was never installed
        installed = "0.0.0"
    return mcp_types.Implementation(name=NAME, title=TITLE, version=installed)
