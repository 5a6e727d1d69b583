"""Sampling: a server asks the client's model for a completion (``sampling/createMessage``).

Served only for servers with ``sampling: true``, only while a tool call a person started
is running (so the tokens are counted for someone), with the request's ``maxTokens``
lowered to the server's ``sampling_max_tokens``, at most ``sampling_max_requests_per_call``
requests per call. The bot answers with its own model (``tools/mcp/model_sampler.py``),
counts the tokens in the person's usage and audits the request.
Images and audio in the request are described in words, not sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tools.call_context import Requester
from tools.mcp.results import size_of

if TYPE_CHECKING:  # loaded where a server asks (tools/mcp/server_requests.py), not at start-up
    import mcp_types


@dataclass(frozen=True)
class SamplingRequest:
    server: str
    tool: str  # the tool whose call the request came in (its exposed name), or ""
    requester: Requester
    messages: list[dict[str, Any]]  # OpenAI format, the system prompt first if any
    max_tokens: int
    temperature: float | None = None


@dataclass(frozen=True)
class SamplingReply:
    text: str
    model: str
    stopped_at_limit: bool = False


OVER_LIMIT = "over_limit"  # a request past sampling_max_requests_per_call


class Sampler(Protocol):
    async def sample(self, request: SamplingRequest) -> SamplingReply: ...

    async def refused(self, request: SamplingRequest, outcome: str) -> None:
        """``request`` was not served (``outcome`` says why): for the audit."""
        ...


def chat_messages(params: mcp_types.CreateMessageRequestParams) -> list[dict[str, Any]]:
    """The request's conversation in the OpenAI message format (pure)."""
    messages: list[dict[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        text = "\n".join(_content_text(block) for block in message.content_as_list)
        messages.append({"role": message.role, "content": text})
    return messages


def capped_tokens(requested: int, cap: int) -> int:
    return max(1, min(requested, cap))


def create_message_result(reply: SamplingReply) -> mcp_types.CreateMessageResult:
    import mcp_types

    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=reply.text),
        model=reply.model,
        stop_reason="maxTokens" if reply.stopped_at_limit else "endTurn",
    )


def _content_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {size_of(block.data)}; not shown to the model]"
    return f"[{kind or 'unknown'} content]"
