"""slack_sdk's real AsyncWebClient answered in memory by the fake Slack's logic, with faults.

For tests that run many turns through many failures quickly: every Web API method the bot
calls goes through ``AsyncWebClient`` (argument handling, Block Kit and chunk objects,
``chat_stream``, error raising) and reaches :class:`~tests.fakes.slack_server.FakeSlack`'s
``_answer`` without HTTP. Several simulated processes may share one FakeSlack from several
threads; a lock keeps its state whole.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from tests.fakes.slack_server import FakeSlack

# Decides, before a call reaches Slack, what happens to it: None to let it through, or an
# HTTP status to fail it with. It may also raise (a crash).
Before = Callable[[str], int | None]
# Called after Slack applied a call, before the caller learns the answer (it may raise).
After = Callable[[str], None]


class InMemorySlack(AsyncWebClient):
    def __init__(
        self,
        world: FakeSlack,
        lock: threading.Lock,
        *,
        before: Before = lambda method: None,
        after: After = lambda method: None,
    ) -> None:
        super().__init__(token="xoxb-test", base_url="http://in-memory.invalid/api/")
        self.world = world
        self.lock = lock
        self.before = before
        self.after = after

    async def api_call(  # type: ignore[override]
        self,
        api_method: str,
        *,
        http_verb: str = "POST",
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
    ) -> AsyncSlackResponse:
        args = {**(params or {}), **(data or {}), **(json or {})}
        args.pop("token", None)
        status = self.before(api_method)
        if status is not None:
            reply: dict[str, Any] = {"ok": False, "error": "service_unavailable"}
        else:
            with self.lock:
                reply = self.world._answer(api_method, args)
            self.after(api_method)
        response = AsyncSlackResponse(
            client=self,
            http_verb=http_verb,
            api_url=self.base_url + api_method,
            req_args=args,
            data=reply,
            headers={},
            status_code=status or 200,
        )
        validated: AsyncSlackResponse = response.validate()  # type: ignore[no-untyped-call]
        return validated
