"""Elicitation: a server asks the person a tool runs for (``elicitation/create``).

The request becomes a :class:`tools.questions.Question` for the surface's asker (a form or
buttons in the Slack thread, or a prompt at the console); the answer goes back as it is.
An answer whose fields do not fit the requested schema is never sent: the surface asks
again, and a question with nobody to ask, or no answer in time, is declined. A URL question
whose page is not ``https`` (``tools.questions.page_host``) is declined before anyone is
asked (``server_requests.py``).
"""

from __future__ import annotations

from typing import Any

import mcp_types

from tools.questions import Answer, Question


def question_for(server: str, params: Any, timeout_s: float) -> Question:
    """The question an ``ElicitRequestParams`` (form or URL mode) asks (pure)."""
    who = f"the MCP server {server}"
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return Question(who, params.message, {}, url=params.url, timeout_s=timeout_s)
    schema = dict(getattr(params, "requested_schema", None) or {})
    return Question(who, params.message, schema, timeout_s=timeout_s)


def elicit_result(answer: Answer, url_mode: bool) -> mcp_types.ElicitResult:
    content = answer.content if answer.action == "accept" and not url_mode else None
    return mcp_types.ElicitResult(action=answer.action, content=content)
