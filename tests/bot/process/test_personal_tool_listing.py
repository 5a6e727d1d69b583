"""`slack-agent tools` with a server that signs each person in (pure): the server named as
such, with what a person who has not connected is offered; each tool's row says whether it
runs as its person."""

from __future__ import annotations

from typing import Any

from bot.process.tool_listing import personal_lines, signs_in, tool_row
from permissions.approval import ApprovalConfig
from tools.definition import Tool


async def nothing(arguments: dict[str, Any]) -> str:
    return ""


def test_a_server_that_signs_each_person_in() -> None:
    assert personal_lines("files", ["files_whoami", "files_write_note"]) == [
        "MCP server files: signs each person in: connect with `/agent connect files`",
        "    offered until then: files_whoami, files_write_note",
    ]
    assert personal_lines("files", [])[1] == "    offered until then: nothing"
    assert signs_in("github") == "signs each person in: connect with `/agent connect github`"


def test_a_row_says_whether_the_tool_runs_as_its_person() -> None:
    copy = Tool(
        name="files_whoami",
        description="Connect files to use this tool.",
        parameters={"type": "object", "properties": {}},
        invoke=nothing,
        source="mcp files",
        per_person=True,
    )
    assert tool_row(copy, ApprovalConfig(), {})["per_person"] is True
    assert tool_row(copy.replace(per_person=False), ApprovalConfig(), {})["per_person"] is False
