"""Chat Completions with tools over the openai SDK, streamed or not.

The request goes through the SDK's client (its retries, timeouts, authentication and
errors) as the plain JSON body this module builds, without the SDK's request transform; a
streamed answer is read from the raw response as plain dicts (bot/llm/sse.py), without a
pydantic object per chunk; under the SDK, the bytes travel over aiohttp
(bot/llm/transport.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx2
import openai
from openai import RequestOptions

from bot.llm import sse
from bot.llm.accumulate import StreamAccumulator
from bot.llm.errors import LLMError
from bot.llm.model import Message, TextCallback
from bot.llm.pricing import price_for
from bot.llm.response import (
    NAME_MAX_CHARS,
    ModelResponse,
    ToolCall,
    arguments_text,
    with_unique_ids,
)
from bot.llm.sdk_errors import classify
from bot.llm.telemetry import ModelCallTelemetry, has_content
from bot.llm.tokens import TokenEstimator
from bot.llm.transport import http_client
from bot.llm.usage import Usage

if TYPE_CHECKING:
    from bot.config.schema import LLMConfig

log = logging.getLogger(__name__)


PATH = "/chat/completions"
# The SDK's own option for a response whose body is read by the caller
# (``with_streaming_response``); bearer authentication, as the SDK's create() asks for.
STREAMED: RequestOptions = {
    "headers": {"X-Stainless-Raw-Response": "stream"},
    "security": {"bearer_auth": True},
}
WHOLE: RequestOptions = {"security": {"bearer_auth": True}}


class OpenAIChatModel:
    """Any OpenAI-compatible server: OpenAI, Azure OpenAI, DashScope, DeepSeek, vLLM, Ollama,
    LiteLLM. The SDK retries connection errors, 408/409/429 and 5xx (``max_retries``)."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        api_key: str | None,
        base_url: str | None = None,
        estimator: TokenEstimator | None = None,
    ) -> None:
        self.config = config
        self.model_name = config.model
        # Learns characters per token from the usage this server reports.
        self.estimator = estimator or TokenEstimator()
        self.client = openai.AsyncOpenAI(
            # Local servers (Ollama, vLLM) take any key; the SDK insists on one.
            api_key=api_key or "unused",
            base_url=base_url or config.base_url,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
            http_client=http_client(),
        )
        self._calls = 0
        self.price = price_for(config.model, config.prices)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        *,
        tool_choice: str | None = None,
        on_text: TextCallback | None = None,
        max_tokens: int | None = None,
    ) -> ModelResponse:
        """``max_tokens`` overrides ``llm.max_tokens`` for this call (a cap on sampling)."""
        self._calls += 1
        request = self._request(messages, tools, tool_choice)
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        call = ModelCallTelemetry(self.model_name, request, self.price)
        with call.span():
            try:
                try:
                    if self.config.stream:
                        response = await self._streamed(request, on_text, call)
                    else:
                        response = await self._whole(request, on_text)
                except LLMError:
                    raise
                except Exception as exc:
                    raise classify(exc) from exc
            except LLMError as exc:
                call.failed(exc.kind)
                raise
            response = self._with_usage(response, messages, tools)
            call.finished(response)
        return response

    def _with_usage(
        self, response: ModelResponse, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        """The response with usage: the server's (which teaches the estimator), or estimated."""
        tools_chars = len(json.dumps(list(tools))) if tools else 0
        if response.usage.requests and response.usage.prompt_tokens:
            self.estimator.observe(messages, response.usage.prompt_tokens, tools_chars)
        else:
            estimator = self.estimator
            estimated = Usage(
                prompt_tokens=estimator.tokens(messages) + estimator.chars_tokens(tools_chars),
                completion_tokens=estimator.tokens([assistant_like(response)]),
                requests=1,
                estimated=True,
            )
            response = _replace_usage(response, estimated)
        return response

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        tool_choice: str | None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.config.model, "messages": list(messages)}
        if tools:
            request["tools"] = list(tools)
            if tool_choice:
                request["tool_choice"] = tool_choice
            if self.config.parallel_tool_calls is not None:
                request["parallel_tool_calls"] = self.config.parallel_tool_calls
        if self.config.temperature is not None:
            request["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            request["max_tokens"] = self.config.max_tokens
        if self.config.extra_body:
            request["extra_body"] = dict(self.config.extra_body)
        return request

    async def _streamed(
        self,
        request: dict[str, Any],
        on_text: TextCallback | None,
        call: ModelCallTelemetry | None = None,
    ) -> ModelResponse:
        if self.config.stream_usage:
            request["stream_options"] = {"include_usage": True}
        response = await self.client.post(
            PATH, cast_to=httpx2.Response, body=body_of(request, stream=True), options=STREAMED
        )
        acc = StreamAccumulator()
        async with contextlib.aclosing(sse.chunks(response)) as chunks:
            async for chunk in chunks:
                text = acc.add(chunk)
                if call is not None and call.waiting_for_first_token and has_content(chunk):
                    call.first_token()
                if text and on_text is not None:
                    await on_text(text)
        return ModelResponse(
            text=acc.text,
            tool_calls=with_unique_ids(acc.tool_calls(), f"call_{self._calls}"),
            usage=acc.usage or Usage(),
            finish_reason=acc.finish_reason,
            model=acc.model,
        )

    async def _whole(self, request: dict[str, Any], on_text: TextCallback | None) -> ModelResponse:
        response = await self.client.post(
            PATH, cast_to=httpx2.Response, body=body_of(request, stream=False), options=WHOLE
        )
        completion = response.json()
        choices = completion.get("choices") if isinstance(completion, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise LLMError("invalid_response", "the completion has no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            message = {}
        text = message.get("content") or ""
        calls = [
            ToolCall(
                c.get("id") or "",
                str(c["function"].get("name") or "")[:NAME_MAX_CHARS],
                arguments_text(c["function"].get("arguments")),
            )
            for c in message.get("tool_calls") or ()
            if isinstance(c, dict) and isinstance(c.get("function"), dict)
        ]
        if text and on_text is not None:
            await on_text(text)
        usage = completion.get("usage")
        return ModelResponse(
            text=text,
            tool_calls=with_unique_ids(calls, f"call_{self._calls}"),
            usage=Usage.from_api(usage) if isinstance(usage, dict) else Usage(),
            finish_reason=choice.get("finish_reason"),
            model=completion.get("model") or "",
        )

    async def aclose(self) -> None:
        await self.client.close()


def body_of(request: dict[str, Any], *, stream: bool) -> dict[str, Any]:
    """The JSON the server is sent: the request, ``extra_body`` merged in at the top level
    (its keys win, as with the SDK's ``extra_body``)."""
    body = {key: value for key, value in request.items() if key != "extra_body"}
    if stream:
        body["stream"] = True
    body.update(request.get("extra_body") or {})
    return body


def assistant_like(response: ModelResponse) -> Message:
    """The response as a message, for estimating its tokens."""
    return {
        "role": "assistant",
        "content": response.text,
        "tool_calls": [call.to_message() for call in response.tool_calls],
    }


def _replace_usage(response: ModelResponse, usage: Usage) -> ModelResponse:
    return ModelResponse(
        text=response.text,
        tool_calls=response.tool_calls,
        usage=usage,
        finish_reason=response.finish_reason,
        model=response.model,
    )
