"""The LLM client: any OpenAI-compatible Chat Completions server."""

from bot.llm.client import ChatModel, OpenAIChatModel, TextCallback
from bot.llm.errors import LLMError
from bot.llm.response import ModelResponse, ToolCall
from bot.llm.usage import Usage

__all__ = [
    "ChatModel",
    "LLMError",
    "ModelResponse",
    "OpenAIChatModel",
    "TextCallback",
    "ToolCall",
    "Usage",
]
