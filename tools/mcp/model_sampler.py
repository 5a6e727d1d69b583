"""MCP sampling served with the bot's own model: the tokens count in the usage of the person
whose tool call the request came in, and each request is audited (``kind: sampling``).

The model, the usage counters and the audit log are the bot's; ``bot/process/services.py``
hands them in as the small protocols below, so nothing here imports the bot.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from tools.call_context import Requester
from tools.mcp.sampling import SamplingReply, SamplingRequest

log = logging.getLogger(__name__)


class Tokens(Protocol):
    """A model call's usage, as far as the audit entry reads it."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...


U = TypeVar("U", bound=Tokens)
U_co = TypeVar("U_co", bound=Tokens, covariant=True)


class Completion(Protocol[U_co]):
    """What one model call answers."""

    @property
    def text(self) -> str: ...

    @property
    def usage(self) -> U_co: ...

    @property
    def model(self) -> str: ...

    @property
    def finish_reason(self) -> str | None: ...


class CappableModel(Protocol[U_co]):
    """A chat model whose answer length can be capped per call (OpenAIChatModel); a failed
    call raises a :class:`ModelFailure`."""

    model_name: str

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        *,
        max_tokens: int | None = None,
    ) -> Completion[U_co]: ...


@runtime_checkable
class ModelFailure(Protocol):
    """A failed model call, with a short code for its kind (LLMError)."""

    kind: str


# Counts a sampling request's tokens in the person's usage, outside any turn.
TokenCounter = Callable[[Requester, U], Awaitable[None]]
# The model a request's person is served with (the bot's: within their spending limits).
ModelFor = Callable[[Requester], Awaitable[CappableModel[U]]]


class Audit(Protocol):
    """Adds one entry to the audit log."""

    async def __call__(
        self,
        *,
        kind: str,
        actor: str,
        action: str,
        target: str,
        outcome: str,
        detail: dict[str, Any],
    ) -> None: ...


class ModelSampler(Generic[U]):
    def __init__(
        self,
        model: CappableModel[U],
        count_tokens: TokenCounter[U],
        audit: Audit,
        model_for: ModelFor[U] | None = None,
    ) -> None:
        self.model = model
        self.count_tokens = count_tokens
        self.audit = audit
        self.model_for = model_for  # None: ``model`` for everyone

    async def _model(self, who: Requester) -> CappableModel[U]:
        return self.model if self.model_for is None else await self.model_for(who)

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        who = request.requester
        try:
            model = await self._model(who)
            response = await model.complete(request.messages, [], max_tokens=request.max_tokens)
        except Exception as exc:
            if isinstance(exc, ModelFailure):
                await self._audit(request, exc.kind, {})
            raise
        try:
            await self.count_tokens(who, response.usage)
        except Exception:
            log.warning("could not count the tokens of a sampling request", exc_info=True)
        await self._audit(
            request,
            "ok",
            {
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "max_tokens": request.max_tokens,
                "model": response.model or self.model.model_name,
            },
        )
        return SamplingReply(
            text=response.text,
            model=response.model or self.model.model_name,
            stopped_at_limit=response.finish_reason == "length",
        )

    async def refused(self, request: SamplingRequest, outcome: str) -> None:
        """A request that was not served is audited with ``outcome`` (``over_limit``)."""
        await self._audit(request, outcome, {})

    async def _audit(self, request: SamplingRequest, outcome: str, detail: dict[str, Any]) -> None:
        who = request.requester
        try:
            await self.audit(
                kind="sampling",
                actor=who.user,
                action=request.tool or "sampling",
                target=f"mcp {request.server}",
                outcome=outcome,
                detail={**detail, "channel": who.channel or "", "thread": who.thread or ""},
            )
        except Exception:
            log.warning("could not audit a sampling request", exc_info=True)
