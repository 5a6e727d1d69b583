"""MCP tools inside the Slack app: they obey roles, admin switches and the audit exactly like
Python tools, time out, report errors, and a dead server fails no turn that does not use it."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import pytest

from tests.fakes.llm_server import calls, text, tool_results
from tests.fakes.mcp_servers import HttpMcpServer
from tests.fakes.slack_harness import SlackHarness, mention
from tests.waiting import until

ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "clerk": {"members": ["U0CLERK"], "tools": ["wh_lookup_*", "get_time", "wh_nothing_*"]},
    "member": {"default": True, "tools": ["get_time"]},
}


def config(server: dict[str, Any]) -> dict[str, Any]:
    return {
        "roles": ROLES,
        "slack": {"streaming": False},
        "mcp": {
            "servers": {
                "warehouse": {
                    "prefix": "wh_",
                    "deny": ["delete_*"],
                    "call_timeout_s": 1,
                    "ping_interval_s": 0.3,
                    "approval": "never",  # these tests are not about approvals
                    **server,
                }
            },
            "reconnect_max_s": 0.5,
        },
    }


STDIO = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"]}


@pytest.fixture
async def app(slack_app: SlackHarness, caplog: pytest.LogCaptureFixture) -> SlackHarness:
    caplog.set_level(logging.INFO)
    return await slack_app.start(**config(STDIO))


async def test_mcp_tools_obey_roles(app: SlackHarness, caplog: pytest.LogCaptureFixture) -> None:
    app.llm.add(text("a"), text("b"))
    await app.post(app.envelope(mention("hi", "300.000001", user="U0CLERK")))
    await app.answered("C0CHAN", "300.000001")
    await app.post(app.envelope(mention("hi", "301.000001", user="U0ADMIN")))
    await app.answered("C0CHAN", "301.000001")
    assert app.llm.offered_tools(0) == ["get_time", "wh_lookup_stock"]
    admin_tools = app.llm.offered_tools(1)
    assert {"wh_lookup_stock", "wh_slow_report", "wh_broken", "calculate"} <= set(admin_tools)
    assert "wh_delete_everything" not in admin_tools  # the server's deny list
    # A role pattern that names no tool, even after the server listed its tools, is a warning.
    warnings = [r.getMessage() for r in caplog.get_records("setup") if r.levelname == "WARNING"]
    assert any("roles.clerk.tools[2]: 'wh_nothing_*' matches no tool" in w for w in warnings)


async def test_a_call_runs_on_the_server_and_is_audited(app: SlackHarness) -> None:
    app.llm.add(
        calls(("wh_lookup_stock", {"item": "flour"}, "m1")),
        lambda request: text(f"Stock: {tool_results(request)['m1']}"),
    )
    await app.post(app.envelope(mention("flour?", "302.000001", user="U0CLERK")))
    [answer] = await app.answered("C0CHAN", "302.000001")
    assert answer.shown == "Stock: flour: 12 bags"
    audit = (await app.command("audit 3", user="U0ADMIN"))["text"]
    assert "<@U0CLERK> tool `wh_lookup_stock` → ok" in audit


async def test_a_forbidden_mcp_tool_is_refused(app: SlackHarness) -> None:
    app.llm.add(calls(("wh_broken", {"reason": "x"}, "f1")), text("no"))
    await app.post(app.envelope(mention("break it", "303.000001", user="U0CLERK")))
    await app.answered("C0CHAN", "303.000001")
    assert json.loads(tool_results(app.llm.requests[1])["f1"])["error"] == "ToolNotAllowed"


async def test_a_slow_mcp_tool_times_out_and_an_error_result_is_read(app: SlackHarness) -> None:
    app.llm.add(
        calls(("wh_slow_report", {"seconds": 5}, "s1"), ("wh_broken", {"reason": "x"}, "b1")),
        text("Both failed."),
    )
    await app.post(app.envelope(mention("report", "304.000001", user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", "304.000001")
    assert answer.shown == "Both failed."
    results = tool_results(app.llm.requests[1])
    assert json.loads(results["s1"]) == {
        "error": "TimeoutError",
        "message": "wh_slow_report took longer than 1 s",
    }
    assert json.loads(results["b1"]) == {
        "error": "McpToolError",
        "message": "Error executing tool broken",
    }


async def test_an_admin_switches_an_mcp_tool_off(app: SlackHarness) -> None:
    reply = await app.command("disable wh_lookup_stock", user="U0ADMIN")
    assert reply["text"].startswith("`wh_lookup_stock` is now off")
    app.llm.add(text("ok"))
    await app.post(app.envelope(mention("hi", "305.000001", user="U0CLERK")))
    await app.answered("C0CHAN", "305.000001")
    assert app.llm.offered_tools(0) == ["get_time"]
    everything = (await app.command("tools all", user="U0ADMIN"))["text"]
    assert "• `wh_lookup_stock` [mcp warehouse] — *off*" in everything


async def test_a_dead_server_fails_no_turn_that_does_not_use_it(
    slack_app: SlackHarness, http_mcp_server: HttpMcpServer
) -> None:
    app = await slack_app.start(**config({"url": http_mcp_server.url}))
    assert app.services is not None
    connection = app.services.tools.mcp.connections["warehouse"]
    assert "wh_lookup_stock" in connection.tools
    http_mcp_server.kill()
    await until(lambda: not connection.tools, 15)
    app.llm.add(calls(("get_time", {"timezone": "UTC"}, "t1")), text("It is noon."))
    await app.post(app.envelope(mention("time?", "306.000001", user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", "306.000001")
    assert answer.shown == "It is noon."
    assert not any(name.startswith("wh_") for name in app.llm.offered_tools(0))
    http_mcp_server.start()
    await until(lambda: "wh_lookup_stock" in connection.tools, 20)
