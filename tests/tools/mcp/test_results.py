"""Mapping MCP tool results to the text the model reads (pure)."""

from __future__ import annotations

import json

import mcp_types as t
import pytest

from tools.mcp.connection import exposed_name
from tools.mcp.results import McpToolError, render_result

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def result(*content: object, structured: object = None, error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=list(content), structured_content=structured, is_error=error)


def test_text_blocks_are_joined() -> None:
    text = render_result(
        result(t.TextContent(type="text", text="one"), t.TextContent(type="text", text="two"))
    )
    assert text == "one\ntwo"


def test_structured_content_becomes_json() -> None:
    shown = render_result(
        result(t.TextContent(type="text", text='{"a": 1}'), structured={"a": 1, "ü": [2]})
    )
    assert json.loads(shown) == {"a": 1, "ü": [2]}
    assert "ü" in shown  # not escaped


def test_images_audio_and_resources_are_described() -> None:
    shown = render_result(
        result(
            t.ImageContent(type="image", data=PNG, mime_type="image/png"),
            t.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            t.ResourceLink(type="resource_link", uri="file:///report.pdf", name="report"),
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
        )
    )
    assert shown.splitlines() == [
        "[image: image/png, 70 bytes]",
        "[audio: audio/wav, 3 bytes]",
        "[resource link: report file:///report.pdf]",
        "[resource file:///notes.txt]",
        "hello",
        "[resource file:///x.bin: application/octet-stream, 3 bytes]",
    ]


def test_with_structured_content_other_media_are_still_described() -> None:
    shown = render_result(
        result(
            t.ImageContent(type="image", data=PNG, mime_type="image/png"), structured={"ok": True}
        )
    )
    assert shown.splitlines() == ['{"ok": true}', "[image: image/png, 70 bytes]"]


def test_is_error_becomes_an_error() -> None:
    with pytest.raises(McpToolError, match="quota exceeded"):
        render_result(result(t.TextContent(type="text", text="quota exceeded"), error=True))
    with pytest.raises(McpToolError, match="without details"):
        render_result(result(error=True))


def test_exposed_names_are_safe_for_every_provider() -> None:
    assert exposed_name("jira_", "search.issues/v2") == "jira_search_issues_v2"
    assert len(exposed_name("p_", "x" * 100)) == 64
