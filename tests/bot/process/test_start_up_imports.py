"""What a ``run`` or ``worker`` process loads at start-up: not the MCP SDK while no MCP server
is configured, and not the embedded Redis (fakeredis, numpy) while REDIS_URL names one.
Together they cost every process start about a second on a 2-core machine. Each check runs
in a fresh interpreter, whose modules are the start-up's own."""

from __future__ import annotations

import json
import subprocess
import sys

LOADED = """
import json, sys
import bot.process.run, bot.process.commands
from tools.mcp import McpConfig, McpManager
McpManager(McpConfig())
before = {m: m in sys.modules for m in ("mcp", "mcp_types", "fakeredis", "numpy")}
manager = McpManager(McpConfig.model_validate({"servers": {"s": {"command": "true"}}}))
kind = type(manager.connections["s"]).__name__
print(json.dumps({"before": before, "after": "mcp" in sys.modules, "kind": kind}))
"""


def test_the_mcp_sdk_and_the_embedded_redis_are_loaded_only_when_used() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADED], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] == {"mcp": False, "mcp_types": False, "fakeredis": False, "numpy": False}
    # A configured server loads the SDK and makes its connection.
    assert seen["after"] is True and seen["kind"] == "McpConnection"
