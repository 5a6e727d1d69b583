"""What a chat model is to the rest of the bot: one call, messages and tool specs in, a
:class:`ModelResponse` out, its text handed to ``on_text`` as it streams. The openai-SDK
implementation is in client.py; this module loads no SDK."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from bot.llm.response import ModelResponse

TextCallback = Callable[[str], Awaitable[None]]
Message = dict[str, Any]


class ChatModel(Protocol):
    """One model call. Implementations raise :class:`LLMError` and nothing else."""

    model_name: str

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        *,
        tool_choice: str | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelResponse: ...
