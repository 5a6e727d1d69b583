"""Where a key lives in a Redis Cluster: its shard, and the shard's hash tag.

A Redis Cluster keeps every key in one of 16,384 slots, and a script or transaction may only
touch keys of one slot. So every key this bot writes belongs to a *shard*, and every key of
a shard carries the shard's hash tag (``{...}``): the keys one atomic step touches always
share a slot.

- A thread's keys (its queue, lock, history, turns, asides, approvals) are in the thread's
  shard, chosen by a hash of the thread.
- What spans threads is kept once per shard, so a turn's last move writes it in the same
  step: the turn stream, the dead letters, the notices, the audit log, the usage counters.
  Readers merge the shards.
- A team's keys (grants, cached roles, feedback, budgets) are in the team's shard, a
  question's in the question's.
- An id minted in a shard (a turn's entry id, an approval request's id) names its shard,
  ``<shard>/<id>``, so its keys are found from the id alone.

With one shard (a single Redis, the default) there are no tags and ids are bare: the keys
are exactly those of a bot without shards.

Each shard's tag is chosen so that the shards' slots are spread evenly over the slot space
(the bits of the shard number reversed), so shards spread evenly over the primaries whatever
their count, and a shard keeps its tag when the number of shards changes.
"""

from __future__ import annotations

import zlib
from functools import cache

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

SLOT_BITS = 14  # 16,384 slots
MAX_SHARDS = 1024
SLOT_WINDOW = 8  # a tag's slot lies within this many slots after its shard's target


@cache
def shard_tag(shard: int) -> str:
    """The hash tag of ``shard``: the first ``{s<shard>.<n>}`` whose slot lies just after
    the shard's target slot (its number's bits reversed over the slot space)."""
    target = int(format(shard, f"0{SLOT_BITS}b")[::-1], 2)
    n = 0
    while True:
        tag = f"s{shard}.{n}"
        if (key_slot(tag.encode()) - target) % REDIS_CLUSTER_HASH_SLOTS < SLOT_WINDOW:
            return "{" + tag + "}"
        n += 1


class Shards:
    """``count`` shards; one (the default) means no tags and bare ids."""

    def __init__(self, count: int = 1) -> None:
        if not 1 <= count <= MAX_SHARDS:
            raise ValueError(f"shards must be between 1 and {MAX_SHARDS}, not {count}")
        self.count = count

    @property
    def sharded(self) -> bool:
        return self.count > 1

    def all(self) -> range:
        return range(self.count)

    def of(self, owner: object) -> int:
        """The shard of a thread, a team, a question: by a hash of its text."""
        if not self.sharded:
            return 0
        return zlib.crc32(str(owner).encode()) % self.count

    def tag(self, shard: int) -> str:
        return shard_tag(shard) if self.sharded else ""

    def qualify(self, shard: int, bare_id: str) -> str:
        """An id minted in ``shard`` (a stream entry's, a request's) that names its shard."""
        return f"{shard}/{bare_id}" if self.sharded else bare_id

    def of_id(self, qualified_id: str) -> int:
        """The shard an id was minted in; 0 for a bare id, and for one that names no shard of
        these (an id from a button can be forged: it then finds no key, and no hash tag is
        made up for it)."""
        shard, slash, _ = qualified_id.partition("/")
        if not (slash and self.sharded and shard.isascii() and shard.isdigit()):
            return 0
        number = int(shard)
        return number if number < self.count else 0

    @staticmethod
    def bare(qualified_id: str) -> str:
        """The id without its shard (a stream entry's id, as Redis knows it)."""
        return qualified_id.rpartition("/")[2]
