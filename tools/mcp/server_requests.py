"""What an MCP server asks of the client while one of its tools runs: progress reports,
sampling (a completion from the bot's model) and elicitation (a question to the person).

Each is served for the call it belongs to (``tools/mcp/running.py``): progress goes to the
call's scope; sampling is answered only during a call a person started, with ``maxTokens``
capped to the server's ``sampling_max_tokens``, at most ``sampling_max_requests_per_call``
times per call (every request past it is an error to the server, the first one audited); a
question goes only to the person the call runs for, with the call's deadline stopped while
they are asked, and is declined when nobody can be asked, or when it would send them to a
page that is not ``https``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any

import mcp_types
from mcp.client.session import ClientRequestContext, SamplingFnT
from mcp.shared.dispatcher import ProgressFnT

from tools.mcp.config import McpServerConfig
from tools.mcp.elicitation import elicit_result, question_for
from tools.mcp.failures import describe
from tools.mcp.running import RunningCalls
from tools.mcp.sampling import (
    OVER_LIMIT,
    Sampler,
    SamplingRequest,
    capped_tokens,
    chat_messages,
    create_message_result,
)
from tools.questions import Answer, page_host

log = logging.getLogger(__name__)


class ServerRequests:
    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        sampler: Sampler | None,
        elicitation_timeout_s: float,
    ) -> None:
        self.name = name
        self.config = config
        self.sampler = sampler
        self.elicitation_timeout_s = elicitation_timeout_s
        self._calls = RunningCalls()

    @contextlib.contextmanager
    def serving(self, tool: str) -> Iterator[ProgressFnT | None]:
        """While a call of ``tool`` made from this task runs, the server's requests are
        served for it; yields where its progress goes."""
        with self._calls.running(tool) as running:
            scope = running.scope
            yield scope.progress if scope else None

    def sampling_callback(self) -> SamplingFnT | None:
        """Sampling is offered to a server with ``sampling: true`` when there is a sampler."""
        return self.sample if self.config.sampling and self.sampler else None

    async def sample(
        self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        running = self._calls.asking()
        if running is None or running.requester is None or self.sampler is None:
            log.info("MCP server %s asked for sampling outside a person's tool call", self.name)
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message="Sampling is only served during a tool call a person started.",
            )
        running.sampled += 1
        if params.tools:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST, message="Sampling with tools is not supported."
            )
        request = SamplingRequest(
            server=self.name,
            tool=running.tool,
            requester=running.requester,
            messages=chat_messages(params),
            max_tokens=capped_tokens(params.max_tokens, self.config.sampling_max_tokens),
            temperature=params.temperature,
        )
        limit = self.config.sampling_max_requests_per_call
        if running.sampled > limit:
            if running.sampled == limit + 1:  # said once per call
                log.warning(
                    "MCP server %s asked for more than %d sampling requests during one call "
                    "of %s; refusing the rest",
                    self.name,
                    limit,
                    running.tool,
                )
                try:
                    await self.sampler.refused(request, OVER_LIMIT)
                except Exception as exc:
                    log.warning("could not record a refused sampling request: %s", describe(exc))
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message=f"This tool call already made {limit} sampling requests, the most one "
                "call may make (sampling_max_requests_per_call).",
            )
        try:
            reply = await self.sampler.sample(request)
        except Exception as exc:
            log.warning("sampling for MCP server %s failed: %s", self.name, describe(exc))
            return mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR, message=f"The model could not answer: {exc}"
            )
        return create_message_result(reply)

    async def elicit(
        self, context: ClientRequestContext, params: Any
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        url_mode = isinstance(params, mcp_types.ElicitRequestURLParams)
        running = self._calls.asking()
        asker = running.requester.asker if running and running.requester else None
        if running is None or asker is None:
            log.info("MCP server %s asked a question, but nobody can be asked; declined", self.name)
            return elicit_result(Answer.declined(), url_mode)
        question = question_for(self.name, params, self.elicitation_timeout_s)
        if question.url is not None and page_host(question.url) is None:
            # The address may hold a token: only its scheme is logged.
            log.warning(
                "MCP server %s asked to send the person to a page that is not https (%s); declined",
                self.name,
                _scheme(question.url),
            )
            return elicit_result(Answer.declined(), url_mode)
        scope = running.scope
        task = asyncio.ensure_future(asker.ask(question))
        running.asks.add(task)
        try:
            with scope.clock_stopped() if scope else contextlib.nullcontext():
                answer = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            answer = Answer("cancel")  # the tool call ended while the person was asked
        except Exception as exc:
            log.warning("asking for MCP server %s failed: %s", self.name, describe(exc))
            answer = Answer.declined()
        finally:
            running.asks.discard(task)
            if not task.done():
                task.cancel()
        return elicit_result(answer, url_mode)


def _scheme(url: str) -> str:
    """What a URL's scheme is, for a log line (never the rest of it, nor a line break)."""
    scheme, colon, _ = url.partition(":")
    return re.sub(r"[^A-Za-z0-9+.-]", "?", scheme[:20]) if colon else "no scheme"
