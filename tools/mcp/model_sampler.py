"""MCP sampling served with the bot's own model: the tokens count in the usage of the person
whose tool call the request came in, and each request is audited (``kind: sampling``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from bot.llm.errors import LLMError
from bot.llm.pricing import Price, cost_of
from bot.llm.response import ModelResponse
from bot.state.audit import AuditEntry, AuditLog
from bot.state.usage import UsageCounters
from tools.mcp.sampling import SamplingReply, SamplingRequest

log = logging.getLogger(__name__)


class CappableModel(Protocol):
    """A chat model whose answer length can be capped per call (OpenAIChatModel)."""

    model_name: str

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        *,
        max_tokens: int | None = None,
    ) -> ModelResponse: ...


class ModelSampler:
    def __init__(
        self, model: CappableModel, price: Price | None, usage: UsageCounters, audit: AuditLog
    ) -> None:
        self.model = model
        self.price = price
        self.usage = usage
        self.audit = audit

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        who = request.requester
        try:
            response = await self.model.complete(
                request.messages, [], max_tokens=request.max_tokens
            )
        except LLMError as exc:
            await self._audit(request, exc.kind, {})
            raise
        cost = cost_of(response.usage, self.price)
        try:
            await self.usage.record(who.team, who.user, response.usage, cost, turns=0)
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

    async def _audit(self, request: SamplingRequest, outcome: str, detail: dict[str, Any]) -> None:
        who = request.requester
        entry = AuditEntry(
            kind="sampling",
            actor=who.user,
            action=request.tool or "sampling",
            target=f"mcp {request.server}",
            outcome=outcome,
            detail={**detail, "channel": who.channel or "", "thread": who.thread or ""},
        )
        try:
            await self.audit.add(entry)
        except Exception:
            log.warning("could not audit a sampling request", exc_info=True)
