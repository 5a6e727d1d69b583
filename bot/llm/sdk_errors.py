"""The openai SDK's exceptions, and those of the transport under it, as :class:`LLMError`
kinds."""

from __future__ import annotations

import aiohttp
import httpx2
import openai

from bot.llm.errors import LLMError


def classify(exc: BaseException) -> LLMError:
    """Map an exception from the openai SDK (or the transport under it) to an LLMError."""
    detail = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, openai.APITimeoutError | TimeoutError | httpx2.TimeoutException):
        lost = connection_lost(exc)
        if lost is not None:
            return LLMError("unreachable", f"{type(lost).__name__}: {lost}")
        return LLMError("timeout", detail)
    if isinstance(exc, openai.APIConnectionError):
        return LLMError("unreachable", detail)
    if isinstance(exc, openai.RateLimitError):
        return LLMError("rate_limited", detail)
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return LLMError("auth", detail)
    if isinstance(exc, openai.NotFoundError):
        return LLMError("not_found", detail)
    if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        return LLMError("bad_request", detail)
    if isinstance(exc, openai.APIStatusError):
        return LLMError("server_error", detail)
    if isinstance(exc, openai.APIResponseValidationError | ValueError | KeyError):
        return LLMError("invalid_response", detail)
    # A transport error in the middle of a stream (the connection dropped after the
    # response started) is not retried by the SDK and arrives unwrapped.
    return LLMError("unreachable", detail)


def connection_lost(exc: BaseException) -> aiohttp.ClientConnectionError | None:
    """The aiohttp error under ``exc`` when the connection failed without timing out
    (refused, reset, closed by the server): the aiohttp transport reports each of them as
    an httpx ``ConnectTimeout``, and a person must not read "took too long" for them."""
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, aiohttp.ClientConnectionError):
            return None if isinstance(cause, aiohttp.ServerTimeoutError) else cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None
