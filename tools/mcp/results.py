"""What an MCP tool returned, as text the model reads (pure).

- Text content is the result, as the server wrote it (never JSON-escaped).
- Structured content is added only when it carries something the text does not (servers
  often mirror one into the other); with no text, it is the result, as JSON.
- Images, audio and binary resources are described (type, size, name), never inlined; so
  are base64 blobs mirrored into structured content.
- Resource links and embedded resources are shown with their URI; ``read_mcp_resource``
  reads them.
- ``isError`` becomes an error result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tools.errors import ToolError

BINARY_KEYS = ("data", "blob")
LONG_BASE64_CHARS = 512
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s_-]+$")


class McpToolError(ToolError):
    kind = "McpToolError"


def render_result(result: Any, server: str = "") -> str:
    content = list(result.content or ())
    parts = [describe_block(block) for block in content]
    text = "\n".join(p for p in parts if p)
    if result.is_error:
        raise McpToolError(text or "The MCP server reported an error without details.")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        shown = without_binary(structured)
        if not text:
            text = json.dumps(shown, ensure_ascii=False)
        elif carries_more(structured, text):
            text += "\nStructured content: " + json.dumps(shown, ensure_ascii=False)
    if server and any(getattr(b, "type", "") in ("resource_link", "resource") for b in content):
        text += f"\n(resources of MCP server {server}: read_mcp_resource reads them by URI)"
    return text


def render_contents(contents: Any) -> str:
    """A ``resources/read`` result's contents as text; binary ones described."""
    parts = []
    for item in contents:
        if getattr(item, "text", None) is not None:
            parts.append(str(item.text))
        else:
            parts.append(_binary("resource", item.uri, getattr(item, "mime_type", None), item.blob))
    return "\n".join(parts)


def describe_block(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {size_of(block.data)}]"
    if kind == "resource_link":
        name = getattr(block, "title", None) or getattr(block, "name", "") or ""
        details = [d for d in (getattr(block, "mime_type", None), _bytes(block)) if d]
        extra = f" ({', '.join(details)})" if details else ""
        label = f"{name} " if name and name != str(block.uri) else ""
        return f"[resource link: {label}{block.uri}{extra}]"
    if kind == "resource":
        resource = block.resource
        if getattr(resource, "text", None) is not None:
            return f"[resource {resource.uri}]\n{resource.text}"
        blob = getattr(resource, "blob", "") or ""
        return _binary("resource", resource.uri, getattr(resource, "mime_type", None), blob)
    return f"[{kind or 'unknown'} content]"


def size_of(base64_data: str) -> str:
    size = len(base64_data) * 3 // 4 - base64_data[-2:].count("=")
    return human_size(size)


def human_size(size: int) -> str:
    if size < 10_000:
        return f"{size} bytes"
    if size < 10_000_000:
        return f"{size // 1024} KB"
    return f"{size // (1024 * 1024)} MB"


def without_binary(value: Any) -> Any:
    """``value`` with base64 blobs replaced by a description of their size."""
    if isinstance(value, dict):
        return {
            key: (
                f"[{size_of(item)} of base64 data]"
                if _is_blob(value, key)
                else without_binary(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [without_binary(item) for item in value]
    if isinstance(value, str) and _looks_binary(value):
        return f"[{size_of(value)} of base64 data]"
    return value


def carries_more(structured: Any, text: str) -> bool:
    """Whether ``structured`` holds something ``text`` does not say: the text is not the
    same JSON, and some string or number in it does not appear in the text."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    else:
        if parsed == structured or structured == {"result": parsed}:
            return False
    return any(not _said(key, leaf, text) for key, leaf in _leaves(structured))


def _said(key: str, leaf: Any, text: str) -> bool:
    """Whether the text shows this value: a string or number itself, a flag by its name
    (nulls are not looked for)."""
    if isinstance(leaf, bool):
        return not key or key in text
    if isinstance(leaf, str):
        return not leaf or leaf in text or json.dumps(leaf)[1:-1] in text
    if isinstance(leaf, int | float):
        return str(leaf) in text or json.dumps(leaf) in text
    return True


def _leaves(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar in ``value`` with the key it is under; blobs are described, never
    compared, so they are skipped."""
    if isinstance(value, dict):
        for name, item in value.items():
            if not _is_blob(value, name):
                yield from _leaves(item, str(name))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, key)
    elif not (isinstance(value, str) and _looks_binary(value)):
        yield key, value


def _is_blob(container: dict[str, Any], key: str) -> bool:
    """A base64 string: long and base64-looking, or the ``data``/``blob`` of an object that
    names its MIME type (content blocks mirrored into structured content)."""
    item = container.get(key)
    if not isinstance(item, str) or not item:
        return False
    if _looks_binary(item):
        return True
    return key in BINARY_KEYS and ("mimeType" in container or "mime_type" in container)


def _looks_binary(text: str) -> bool:
    return len(text) >= LONG_BASE64_CHARS and " " not in text[:200] and bool(_BASE64.match(text))


def _binary(kind: str, uri: Any, mime: str | None, blob: str) -> str:
    return f"[{kind} {uri}: {mime or 'binary'}, {size_of(blob)}]"


def _bytes(block: Any) -> str:
    size = getattr(block, "size", None)
    return human_size(int(size)) if isinstance(size, int | float) else ""
