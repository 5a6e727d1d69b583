"""How many replicas must hold a write before the bot builds on it.

A write Redis has taken but no replica has may be lost in a failover: on a crash, what the
replica had not received; in a graceful one, what the old primary took after the Sentinels
had promoted its replica and before it was demoted. So the writes the bot builds on (an
event's queue entry and dedup records before the ack; each step of a turn before its owner
calls the model, runs a tool or writes to Slack; an approval before the click is answered)
go through :class:`Replication`: sent with ``WAIT`` in the same pipeline when replicas must
confirm them, and refused with :class:`NotReplicated` when too few did within
``redis.replica_ack_timeout_ms``. Callers take that as Redis being away: an event is refused
with a 503 and Slack sends it again; a turn's owner waits while its lease holds, then leaves
the turn to the next owner.

How many confirmations, and where the write must land, is the :class:`ReplicaView`'s answer:
behind Sentinels, what they say now (bot/state/redis/sentinel.py); else the configured
number (``redis.replica_acks``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from bot.state.redis.errors import NotReplicated

DEFAULT_TIMEOUT_MS = 500


@dataclass(frozen=True)
class Requirement:
    """What a write needs now: confirmations from ``acks`` replicas, and, when ``primary``
    is known (behind Sentinels), to have landed on that server."""

    acks: int
    primary: tuple[str, int] | None = None

    @property
    def anything(self) -> bool:
        return self.acks > 0 or self.primary is not None


NOTHING = Requirement(0)


class ReplicaView(Protocol):
    async def requirement(self, wanted: int) -> Requirement:
        """What a write needs now, up to ``wanted`` confirmations; raises
        :class:`NotReplicated` when no write may be made now (a failover under way)."""
        ...


class Configured:
    """A primary whose replicas nobody reports on (a plain ``redis://`` URL): always the
    configured number."""

    async def requirement(self, wanted: int) -> Requirement:
        return Requirement(wanted)


Fill = Callable[[Any], None]  # queues commands on a pipeline


class Replication:
    def __init__(
        self,
        wanted: int = 0,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        view: ReplicaView | None = None,
    ) -> None:
        self.wanted = wanted
        self.timeout_ms = timeout_ms
        self.view: ReplicaView = view or Configured()

    @property
    def on(self) -> bool:
        return self.wanted > 0

    async def requirement(self) -> Requirement:
        return await self.view.requirement(self.wanted) if self.wanted else NOTHING

    async def pipeline(self, client: Any, fill: Fill) -> list[Any]:
        """Send what ``fill`` queues in one pipeline (no transaction), made sure of as the
        view requires; each command's reply or error reply, in order. Raises
        :class:`NotReplicated` when the write may not stand."""
        need = await self.requirement()
        replies = await self._landed(client, fill, need)
        if need.acks:
            acked = replies.pop()
            if isinstance(acked, BaseException):
                raise acked
            self._confirm(acked, need.acks)
        return replies

    async def _landed(self, client: Any, fill: Fill, need: Requirement) -> list[Any]:
        """The replies, once the write landed where it must."""
        if need.primary is None:
            return await self._send(client, fill, need, None)
        pool = client.connection_pool
        for _ in range(2):
            # Behind Sentinels, the write must land on the primary they name: a pooled
            # connection to the old one (the pool looks at most once a second) is dropped,
            # and the next connects where the Sentinels say.
            connection = await pool.get_connection()
            if _address(connection) != need.primary:
                await connection.disconnect()
                await pool.release(connection)
                continue
            replies = await self._send(client, fill, need, connection)
            if _address(connection) == need.primary:  # not moved by a reconnect meanwhile
                return replies
            break
        raise NotReplicated(f"the write did not land on the primary {need.primary}")

    async def _send(self, client: Any, fill: Fill, need: Requirement, connection: Any) -> list[Any]:
        pipe = client.pipeline(transaction=False)
        if connection is not None:
            pipe.connection = connection  # released to the pool when the pipeline is done
        async with pipe:
            fill(pipe)
            if need.acks:
                pipe.wait(need.acks, self.timeout_ms)
            return list(await pipe.execute(raise_on_error=False))

    async def script(self, script: AsyncScript, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """``script``'s reply (its error reply raised), made sure of as the view requires."""
        if not self.on:
            return await script(keys=keys, args=args)

        def call(pipe: Any) -> None:
            pipe.evalsha(script.sha, len(keys), *keys, *args)

        [reply] = await self.pipeline(script.registered_client, call)
        if isinstance(reply, NoScriptError):  # a server that lost its scripts (a failover)
            await script.registered_client.script_load(script.script)
            [reply] = await self.pipeline(script.registered_client, call)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _confirm(self, acked: Any, acks: int) -> None:
        if int(acked) < acks:
            raise NotReplicated(
                f"{acked} of {acks} replica(s) confirmed the write within {self.timeout_ms} ms"
            )

    def register(self, client: Any, source: str) -> ReplicatedScript:
        """``client.register_script(source)``, every call of it made sure of."""
        return ReplicatedScript(client.register_script(source), self)


class ReplicatedScript:
    """A Lua script whose calls go through a :class:`Replication` (called as redis-py's
    scripts are: ``await script(keys=..., args=...)``)."""

    def __init__(self, script: AsyncScript, replication: Replication) -> None:
        self.script = script
        self.replication = replication

    async def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        return await self.replication.script(self.script, keys, args)


def _address(connection: Any) -> tuple[str, int]:
    return str(connection.host), int(connection.port)
