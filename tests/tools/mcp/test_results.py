"""Mapping MCP tool results to the text the model reads (pure)."""

from __future__ import annotations

import base64
import json

import mcp_types as t
import pytest

from tools.errors import ToolArgumentsError
from tools.mcp.remote_tools import exposed_name, wrap_tool
from tools.mcp.results import McpToolError, carries_more, render_contents, render_result

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
BIG_PNG = base64.b64encode(b"\x89PNG" + bytes(352_733)).decode()


def result(*content: object, structured: object = None, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=list(content), structured_content=structured, is_error=error)


def text_block(value: str) -> t.TextContent:
    return t.TextContent(type="text", text=value)


def test_text_blocks_are_joined_as_written() -> None:
    assert render_result(result(text_block("one"), text_block('two "quoted" ü'))) == (
        'one\ntwo "quoted" ü'
    )


def test_text_wins_over_structured_content_that_mirrors_it() -> None:
    # mcp-server-time and the SDK's servers send the same JSON twice; filesystem servers
    # mirror the text into {"content": ...}.
    same = {"timezone": "Europe/Berlin", "datetime": "2026-01-01T10:00:00+01:00", "is_dst": False}
    assert render_result(result(text_block(json.dumps(same, indent=2)), structured=same)) == (
        json.dumps(same, indent=2)
    )
    notes = 'Line one\nLine "two"'
    assert render_result(result(text_block(notes), structured={"content": notes})) == notes
    assert render_result(
        result(text_block("flour: 12 bags"), structured={"result": "flour: 12 bags"})
    ) == ("flour: 12 bags")


def test_structured_content_that_says_more_is_added_to_the_text() -> None:
    shown = render_result(
        result(text_block("Found 2 items."), structured={"items": ["flour", "sugar"], "total": 2})
    )
    text, extra = shown.split("\nStructured content: ")
    assert text == "Found 2 items."
    assert json.loads(extra) == {"items": ["flour", "sugar"], "total": 2}


def test_structured_content_alone_becomes_json() -> None:
    shown = render_result(result(structured={"a": 1, "ü": [2]}))
    assert json.loads(shown) == {"a": 1, "ü": [2]}
    assert "ü" in shown  # not escaped


def test_images_audio_and_resources_are_described_never_inlined() -> None:
    shown = render_result(
        result(
            t.ImageContent(type="image", data=PNG, mime_type="image/png"),
            t.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            t.ResourceLink(
                type="resource_link",
                uri="file:///report.pdf",
                name="report",
                mime_type="application/pdf",
                size=52_000,
            ),
            t.EmbeddedResource(
                type="resource",
                resource=t.TextResourceContents(
                    uri="file:///notes.txt", text="hello", mime_type="text/plain"
                ),
            ),
            t.EmbeddedResource(
                type="resource",
                resource=t.BlobResourceContents(
                    uri="file:///x.bin", blob="AAAA", mime_type="application/octet-stream"
                ),
            ),
        ),
        server="files",
    )
    assert shown.splitlines() == [
        "[image: image/png, 70 bytes]",
        "[audio: audio/wav, 3 bytes]",
        "[resource link: report file:///report.pdf (application/pdf, 50 KB)]",
        "[resource file:///notes.txt]",
        "hello",
        "[resource file:///x.bin: application/octet-stream, 3 bytes]",
        "(resources of MCP server files: read_mcp_resource reads them by URI)",
    ]


def test_an_image_mirrored_into_structured_content_is_described_not_inlined() -> None:
    # server-filesystem's read_media_file: the image block, and the same block as JSON.
    mirrored = {"content": [{"type": "image", "data": BIG_PNG, "mimeType": "image/png"}]}
    shown = render_result(
        result(
            t.ImageContent(type="image", data=BIG_PNG, mime_type="image/png"), structured=mirrored
        )
    )
    assert shown == "[image: image/png, 344 KB]"
    assert len(shown) < 100


def test_binary_in_structured_content_alone_is_described() -> None:
    shown = render_result(result(structured={"name": "photo.png", "blob": BIG_PNG}))
    assert json.loads(shown) == {"name": "photo.png", "blob": "[344 KB of base64 data]"}
    small = {"data": "AAAA", "mimeType": "audio/wav", "note": {"data": "plain words"}}
    assert json.loads(render_result(result(structured=small))) == {
        "data": "[3 bytes of base64 data]",
        "mimeType": "audio/wav",
        "note": {"data": "plain words"},  # a field named data that is not a blob stays
    }


def test_flags_and_numbers_are_looked_for_in_the_text() -> None:
    assert carries_more({"ok": True}, "[image: image/png, 70 bytes]")
    assert not carries_more({"ok": True, "count": 3}, "ok: yes, count 3")
    assert carries_more({"count": 4}, "count 3")


def test_resource_contents_are_text_or_described() -> None:
    shown = render_contents(
        [
            t.TextResourceContents(uri="file:///a.txt", text="alpha"),
            t.BlobResourceContents(uri="file:///b.png", blob=PNG, mime_type="image/png"),
        ]
    )
    assert shown.splitlines() == ["alpha", "[resource file:///b.png: image/png, 70 bytes]"]


def test_is_error_becomes_an_error() -> None:
    with pytest.raises(McpToolError, match="quota exceeded"):
        render_result(result(text_block("quota exceeded"), error=True))
    with pytest.raises(McpToolError, match="without details"):
        render_result(result(error=True))


def test_exposed_names_are_safe_for_every_provider() -> None:
    assert exposed_name("jira_", "search.issues/v2") == "jira_search_issues_v2"
    assert len(exposed_name("p_", "x" * 100)) == 64


async def test_arguments_too_deep_for_the_schema_check_are_a_problem_with_them() -> None:
    """The loop lets no such arguments through; a caller of the tool itself gets the same
    answer, not a RecursionError."""
    recursive = {"type": "object", "properties": {"a": {"$ref": "#"}}}
    remote = t.Tool(name="tree.walk", input_schema=recursive)

    async def never(name: str, arguments: dict[str, object]) -> str:
        raise AssertionError("not called")

    tool = wrap_tool(remote, "wh_", 5, "mcp wh", never)
    deep: dict[str, object] = {}
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(ToolArgumentsError) as caught:
        await tool.invoke(deep)
    assert caught.value.problems == [("", "nested too deeply to check against the tool's schema")]
    assert tool.name == "wh_tree_walk" and tool.remote_name == "tree.walk"
