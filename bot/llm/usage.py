"""Token usage as the API reports it, and its cost from the configured price table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    # True when at least one request's usage was estimated because the server sent none.
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            requests=self.requests + other.requests,
            estimated=self.estimated or other.estimated,
        )

    @classmethod
    def from_api(cls, usage: Any) -> Usage:
        """Read an OpenAI ``CompletionUsage`` (or a dict of the same shape)."""
        data = usage if isinstance(usage, dict) else usage.model_dump()
        details = data.get("prompt_tokens_details") or {}
        return cls(
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            cached_tokens=int(details.get("cached_tokens") or 0),
            requests=1,
        )
