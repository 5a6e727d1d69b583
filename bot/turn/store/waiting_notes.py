"""The note a thread gets when its later messages wait behind a turn that waits for an
approval: one per wait (per approval card), whichever replica meets the thread first.

Only the thread's lease holder may take the note, in one step with the lease's token checked
and the thread's queue looked at (a turn queued behind the waiting one): "posting" is
recorded before the post, "posted" after. A note found "posting" was taken by an earlier
owner that may have posted it before it stopped (a crash, a lost lease, Slack failing): the
next owner looks for it in the thread (by its tag) before posting it.
"""

from __future__ import annotations

from enum import Enum

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.thread_key import ThreadKey

# KEYS: the thread's lock, the thread's queue, the note; ARGV: the lease's token, TTL
# Returns 0 (not ours to post: not the lease holder, nothing queued behind, posted already),
# 1 (post it), 2 (an earlier owner was posting it: look for it first).
TAKE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('ZCARD', KEYS[2]) < 2 then return 0 end
local note = redis.call('GET', KEYS[3])
if note == 'posted' then return 0 end
redis.call('SET', KEYS[3], 'posting', 'EX', ARGV[2])
if note then return 2 end
return 1
"""


class Take(Enum):
    NOTHING = 0  # nothing to post
    POST = 1
    LOOK_FIRST = 2  # an earlier owner may have posted it


class WaitingNotes:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._take = client.register_script(TAKE)

    async def anything_behind(self, thread: ThreadKey) -> bool:
        """Whether a turn is queued behind the thread's first (a look before the take)."""
        return int(await self.client.zcard(self.keys.thread_queue(thread))) > 1

    async def take(self, thread: ThreadKey, wait: str, lock_token: str, keep_s: int) -> Take:
        """Whether this lease holder posts the note of ``wait`` now (a turn must be queued
        behind the waiting one); kept ``keep_s`` (past the wait's end)."""
        taken = await self._take(
            keys=[
                self.keys.lock(thread),
                self.keys.thread_queue(thread),
                self.keys.waiting_note(thread, wait),
            ],
            args=[lock_token, max(keep_s, 1)],
        )
        return Take(int(taken))

    async def posted(self, thread: ThreadKey, wait: str) -> None:
        """The note is in the thread (or can never be): not posted again."""
        await self.client.set(self.keys.waiting_note(thread, wait), "posted", xx=True, keepttl=True)
