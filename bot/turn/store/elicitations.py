"""Questions an MCP server asks a person in Slack, and their answers, in Redis.

The worker running the tool call opens the question and waits for its answer; the person's
click or form reaches whichever replica Slack sends it to, which stores the answer here. An
answer is taken once (the first wins), and only while the question is open: a question is
closed when it is answered, withdrawn or timed out, and it expires on its own.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from tools.questions import Answer

POLL_S = 0.5
KEEP_AFTER_S = 60  # a question outlives its timeout by this much, for late clicks

# Store the answer only if the question is still open and has none yet.
_ANSWER = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'EX', ARGV[2]) then return 1 end
return 0
"""


@dataclass(frozen=True)
class OpenQuestion:
    id: str
    team: str
    channel: str
    thread: str
    user: str  # the only person who may answer
    text: str = ""  # the question as the message shows it
    schema: dict[str, Any] = field(default_factory=dict)
    url: str | None = None
    message_ts: str = ""  # the Slack message that asks it, once posted
    expires_at: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> OpenQuestion:
        return cls(**json.loads(text))


class Elicitations:
    def __init__(self, client: Redis, keys: Keys, poll_s: float = POLL_S) -> None:
        self.client = client
        self.keys = keys
        self.poll_s = poll_s

    async def open(self, question: OpenQuestion, timeout_s: float) -> OpenQuestion:
        opened = replace(question, expires_at=time.time() + timeout_s)
        await self.client.set(
            self.keys.elicitation(question.id),
            opened.to_json(),
            ex=int(timeout_s) + KEEP_AFTER_S,
        )
        return opened

    async def posted(self, question: OpenQuestion, message_ts: str) -> OpenQuestion:
        """Note the message that asks it (so any replica can update it)."""
        updated = replace(question, message_ts=message_ts)
        await self.client.set(
            self.keys.elicitation(question.id), updated.to_json(), xx=True, keepttl=True
        )
        return updated

    async def get(self, question_id: str) -> OpenQuestion | None:
        raw = await self.client.get(self.keys.elicitation(question_id))
        return OpenQuestion.from_json(raw) if raw else None

    async def answer(self, question: OpenQuestion, answer: Answer) -> bool:
        """Store the answer; False when the question is closed or was answered already."""
        keep = max(int(question.expires_at - time.time()), 0) + KEEP_AFTER_S
        stored = await self.client.eval(
            _ANSWER,
            2,
            self.keys.elicitation(question.id),
            self.keys.elicitation_answer(question.id),
            json.dumps({"action": answer.action, "content": answer.content}),
            keep,
        )
        return bool(stored)

    async def wait(self, question_id: str, timeout_s: float) -> Answer | None:
        """The answer, once there is one; None after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        key = self.keys.elicitation_answer(question_id)
        while True:
            raw = await self.client.get(key)
            if raw:
                data = json.loads(raw)
                return Answer(data["action"], data.get("content"))
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            await asyncio.sleep(min(self.poll_s, left))

    async def close(self, question_id: str) -> Answer | None:
        """Close the question; an answer that came in before it closed is returned."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.get(self.keys.elicitation_answer(question_id))
            pipe.delete(
                self.keys.elicitation(question_id), self.keys.elicitation_answer(question_id)
            )
            raw, _ = await pipe.execute()
        if not raw:
            return None
        data = json.loads(raw)
        return Answer(data["action"], data.get("content"))
