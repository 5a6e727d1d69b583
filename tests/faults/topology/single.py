"""One private ``redis-server`` (:class:`~tests.fakes.redis_server.PrivateRedis`): the
default topology, as before."""

from __future__ import annotations

import redis.asyncio

from tests.fakes.redis_server import PrivateRedis
from tests.faults.topology.base import CLIENT_TIMEOUT_S, Topology


class SingleTopology(Topology):
    kind = "single"

    def __init__(self, *, persistent: bool = False) -> None:
        super().__init__()
        self.server = PrivateRedis(appendonly=persistent)

    def start(self) -> None:
        self.server.start()

    def close(self) -> None:
        self.server.close()

    @property
    def url(self) -> str:
        return self.server.url

    def client(self) -> redis.asyncio.Redis:
        if self._client is None:
            self._client = redis.asyncio.Redis.from_url(
                self.server.url,
                decode_responses=True,
                socket_timeout=CLIENT_TIMEOUT_S,
                socket_connect_timeout=CLIENT_TIMEOUT_S,
            )
        assert isinstance(self._client, redis.asyncio.Redis)
        return self._client

    async def primaries(self) -> list[redis.asyncio.Redis]:
        return [self.client()]

    async def primary_for(self, key: str) -> redis.asyncio.Redis:
        return self.client()
