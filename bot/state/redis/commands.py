"""Redis commands collected now and run later, all at once, inside a fenced script.

A turn's transitions carry side effects (history, usage, audit, acknowledging the queue)
that must happen in the same atomic step as the state change, and only if the owner still
holds the thread's lock. The stores that own those keys queue their commands on a
:class:`Commands` with the same call shapes as a redis-py pipeline, so one ``add_to`` works
for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Command = list[str]


class Commands:
    def __init__(self) -> None:
        self.items: list[Command] = []

    def _add(self, *parts: Any) -> Commands:
        self.items.append([str(part) for part in parts])
        return self

    def hset(self, key: str, mapping: Mapping[str, Any]) -> Commands:
        flat = [part for item in mapping.items() for part in item]
        return self._add("HSET", key, *flat)

    def hincrby(self, key: str, field: str, amount: int = 1) -> Commands:
        return self._add("HINCRBY", key, field, amount)

    def hincrbyfloat(self, key: str, field: str, amount: float) -> Commands:
        return self._add("HINCRBYFLOAT", key, field, repr(float(amount)))

    def expire(self, key: str, seconds: int) -> Commands:
        return self._add("EXPIRE", key, int(seconds))

    def sadd(self, key: str, *members: str) -> Commands:
        return self._add("SADD", key, *members)

    def zadd(self, key: str, mapping: Mapping[str, float]) -> Commands:
        flat = [part for member, score in mapping.items() for part in (repr(score), member)]
        return self._add("ZADD", key, *flat)

    def zrem(self, key: str, *members: str) -> Commands:
        return self._add("ZREM", key, *members)

    def delete(self, *keys: str) -> Commands:
        return self._add("DEL", *keys)

    def xadd(
        self,
        key: str,
        fields: Mapping[str, Any],
        maxlen: int | None = None,
        approximate: bool = True,
    ) -> Commands:
        cap = ["MAXLEN", "~" if approximate else "=", maxlen] if maxlen is not None else []
        flat = [part for item in fields.items() for part in item]
        return self._add("XADD", key, *cap, "*", *flat)

    def xack(self, key: str, group: str, *ids: str) -> Commands:
        return self._add("XACK", key, group, *ids)

    def xdel(self, key: str, *ids: str) -> Commands:
        return self._add("XDEL", key, *ids)

    def special(self, *parts: Any) -> Commands:
        """An operation the fenced script implements itself (its name starts with '__')."""
        return self._add(*parts)
