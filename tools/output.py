"""Turn what a handler returned into the text the model reads."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel


def render_output(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=_fallback)
    except (TypeError, ValueError):
        return str(value)


def _fallback(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def error_output(kind: str, message: str) -> str:
    """The JSON error result a model reads, e.g. ``{"error": "TimeoutError", ...}``."""
    return json.dumps({"error": kind, "message": message}, ensure_ascii=False)
