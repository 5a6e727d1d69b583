"""Estimate tokens from characters (no tokenizer download), corrected by what the API reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Message = dict[str, Any]

MESSAGE_OVERHEAD_TOKENS = 4  # role, separators: roughly what chat formats add per message
IMAGE_CHARS = 3000  # a picture part counts as this many characters (not its base64 length)


class TokenEstimator:
    """Characters per token, starting at 4 and moving towards what the API reports."""

    def __init__(self, chars_per_token: float = 4.0, weight: float = 0.3) -> None:
        self.chars_per_token = chars_per_token
        self.weight = weight

    def message_chars(self, message: Message) -> int:
        content = message.get("content") or ""
        if isinstance(content, list):  # content parts: text counts, a picture a fixed amount
            chars = sum(
                len(str(part.get("text") or "")) if part.get("type") == "text" else IMAGE_CHARS
                for part in content
                if isinstance(part, dict)
            )
        else:
            chars = len(str(content))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            chars += len(function.get("name") or "") + len(function.get("arguments") or "")
        return chars

    def tokens(self, messages: Sequence[Message]) -> int:
        chars = sum(self.message_chars(m) for m in messages)
        return round(chars / self.chars_per_token) + MESSAGE_OVERHEAD_TOKENS * len(messages)

    def chars_tokens(self, chars: int) -> int:
        return round(chars / self.chars_per_token)

    def observe(
        self, messages: Sequence[Message], prompt_tokens: int, tools_chars: int = 0
    ) -> None:
        """Correct the ratio from one request whose prompt the API counted."""
        overhead = MESSAGE_OVERHEAD_TOKENS * len(messages)
        chars = sum(self.message_chars(m) for m in messages) + tools_chars
        content_tokens = prompt_tokens - overhead
        if chars < 200 or content_tokens <= 0:
            return  # too small to say anything useful
        measured = min(max(chars / content_tokens, 1.0), 8.0)
        self.chars_per_token += self.weight * (measured - self.chars_per_token)
