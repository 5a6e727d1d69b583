"""What a ``run`` or ``worker`` process loads at start-up: not the MCP SDK while no MCP server
is configured, not the embedded Redis (fakeredis, numpy) while REDIS_URL names one, and not
the openai SDK until the model is needed (a worker loads it as it starts; the ingress and
``slack-agent tools`` never do). Together they cost every process start about a second and
a half on a 2-core machine. Each check runs in a fresh interpreter, whose modules are the
start-up's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

LOADED = """
import json, sys
import bot.process.run, bot.process.commands
from tools.mcp.config import McpConfig
from tools.mcp.manager import McpManager
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


BUILT = """
import json, sys
import bot.process.run, bot.process.commands
from bot.process.services import build_services
services = build_services(None, "run")
before = "openai" in sys.modules
model = services.model.load()
print(json.dumps({
    "before": before,
    "after": "openai" in sys.modules,
    "kind": type(model).__name__,
    "once": model is services.model.load(),
    "shared_estimator": model.estimator is services.model.estimator,
}))
"""


def test_the_openai_sdk_is_loaded_when_the_model_is() -> None:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test",
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "REDIS_URL": "redis://127.0.0.1:1/0",  # never connected to: only built
    }
    env.pop("SLACK_AGENT_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-c", BUILT],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] is False  # the whole app built, its model included: no SDK yet
    assert seen == {
        "before": False,
        "after": True,
        "kind": "OpenAIChatModel",
        "once": True,
        "shared_estimator": True,  # what the model learns of its tokens is the budgets' too
    }
