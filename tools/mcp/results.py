"""What an MCP tool returned, as text the model reads (pure).

Text content is joined; structured content becomes JSON; images, audio and resources get a
short description; ``isError`` becomes an error result.
"""

from __future__ import annotations

import json
from typing import Any

from tools.errors import ToolError


class McpToolError(ToolError):
    kind = "McpToolError"


def render_result(result: Any) -> str:
    parts = [_describe(block) for block in result.content or ()]
    text = "\n".join(p for p in parts if p)
    if result.is_error:
        raise McpToolError(text or "The MCP server reported an error without details.")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        others = [
            p
            for block, p in zip(result.content or (), parts, strict=True)
            if getattr(block, "type", "") != "text" and p
        ]
        body = json.dumps(structured, ensure_ascii=False)
        return "\n".join([body, *others])
    return text


def _describe(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "image":
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if kind == "audio":
        return f"[audio: {block.mime_type}, {_size(block.data)}]"
    if kind == "resource_link":
        name = getattr(block, "name", "") or ""
        return f"[resource link: {name} {block.uri}]".replace("  ", " ")
    if kind == "resource":
        resource = block.resource
        if getattr(resource, "text", None) is not None:
            return f"[resource {resource.uri}]\n{resource.text}"
        mime = getattr(resource, "mime_type", None) or "binary"
        return f"[resource {resource.uri}: {mime}, {_size(getattr(resource, 'blob', '') or '')}]"
    return f"[{kind or 'unknown'} content]"


def _size(base64_data: str) -> str:
    size = len(base64_data) * 3 // 4 - base64_data[-2:].count("=")
    return f"{size} bytes" if size < 10_000 else f"{size // 1024} KB"
